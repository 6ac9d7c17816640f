import type { ApiKey } from '../model.ts'
import type { ApiKeyRepository } from '../port.ts'
import { API_KEYS } from './collections.ts'
import { call, collectionOf, counted, inSession, type MongoContext } from './context.ts'
import { byId, inCompany } from './filters.ts'
import { findAll, findOne, insertOne } from './operations.ts'

export function mongoApiKeys(context: MongoContext): ApiKeyRepository {
  return {
    insert: (key) => counted(context, insertOne(context, API_KEYS, key)),
    // The one lookup not limited to a company: the key is how the company is found (a unique index on the hash).
    findByHash: (hash) => findOne<ApiKey>(context, API_KEYS, { hash }),
    list: (companyId) => findAll<ApiKey>(context, API_KEYS, inCompany(companyId)),
    // Counted, so that this store's cached authentications drop the key at once (`Store.committedWrites`).
    delete: (companyId, id) =>
      counted(
        context,
        call(
          context,
          async (session) => (await collectionOf(context, API_KEYS).deleteOne(byId(companyId, id), inSession(session))).deletedCount > 0,
        ),
      ),
  }
}
