import type { DataTable } from '../model.ts'
import type { DataTableRepository } from '../port.ts'
import { DATA_TABLES } from './collections.ts'
import type { MongoContext } from './context.ts'
import { byId, inCompany } from './filters.ts'
import { findAll, findOne, insertOne } from './operations.ts'

export function mongoDataTables(context: MongoContext): DataTableRepository {
  return {
    insert: (table) => insertOne(context, DATA_TABLES, table),
    get: (companyId, id) => findOne<DataTable>(context, DATA_TABLES, byId(companyId, id)),
    getByKey: (companyId, environment, key) => findOne<DataTable>(context, DATA_TABLES, inCompany(companyId, { environment, key })),
    list: (companyId) => findAll<DataTable>(context, DATA_TABLES, inCompany(companyId)),
  }
}
