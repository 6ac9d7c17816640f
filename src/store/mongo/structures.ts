import type { ReportingStructure } from '../model.ts'
import type { ReportingStructureRepository } from '../port.ts'
import { REPORTING_STRUCTURES } from './collections.ts'
import type { MongoContext } from './context.ts'
import { byId, inCompany } from './filters.ts'
import { findAll, findOne, insertOne } from './operations.ts'

export function mongoStructures(context: MongoContext): ReportingStructureRepository {
  return {
    insert: (structure) => insertOne(context, REPORTING_STRUCTURES, structure),
    get: (companyId, id) => findOne<ReportingStructure>(context, REPORTING_STRUCTURES, byId(companyId, id)),
    list: (companyId) => findAll<ReportingStructure>(context, REPORTING_STRUCTURES, inCompany(companyId)),
  }
}
