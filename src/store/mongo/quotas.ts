import type { Quota } from '../model.ts'
import type { QuotaRepository } from '../port.ts'
import { QUOTAS } from './collections.ts'
import { call, collectionOf, inSession, type MongoContext } from './context.ts'
import { byId, inCompany } from './filters.ts'
import { findAll, findOne, insertOne } from './operations.ts'

export function mongoQuotas(context: MongoContext): QuotaRepository {
  return {
    insert: (quota) => insertOne(context, QUOTAS, quota),
    get: (companyId, id) => findOne<Quota>(context, QUOTAS, byId(companyId, id)),
    list: (companyId) => findAll<Quota>(context, QUOTAS, inCompany(companyId)),
    setType: (companyId, id, type, modifiedAt) =>
      call(context, async (session) => {
        const result = await collectionOf(context, QUOTAS).updateOne(
          byId(companyId, id),
          { $set: { type, modified_at: modifiedAt } },
          inSession(session),
        )
        return result.matchedCount > 0
      }),
  }
}
