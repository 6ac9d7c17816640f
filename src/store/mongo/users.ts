import type { User } from '../model.ts'
import type { UserRepository } from '../port.ts'
import { lookupIds } from './codec.ts'
import { USERS } from './collections.ts'
import { counted, type MongoContext } from './context.ts'
import { byId, inCompany } from './filters.ts'
import { countAll, findAll, findOne, lastIdOf, replaceById, writeAll } from './operations.ts'

/** Users, with their lower-case email beside them (`USERS`): a unique index keeps emails unique per company. */
export function mongoUsers(context: MongoContext): UserRepository {
  return {
    save: (companyId, saved) => counted(context, writeAll(context, USERS, replaceById(USERS, companyId, saved))),
    get: (companyId, id) => findOne<User>(context, USERS, byId(companyId, id)),
    async getMany(companyId, ids) {
      if (ids.length === 0) return new Map()
      const found = await findAll<User>(context, USERS, inCompany(companyId, { _id: { $in: lookupIds(ids) } }))
      return new Map(found.map((user) => [user.id, user]))
    },
    async findByEmails(companyId, emails) {
      if (emails.length === 0) return new Map()
      const lower = [...new Set(emails.map((email) => email.toLowerCase()))]
      const found = await findAll<User>(context, USERS, inCompany(companyId, { email_lower: { $in: lower } }))
      return new Map(found.map((user) => [user.email.toLowerCase(), user]))
    },
    list: (companyId, window) => findAll<User>(context, USERS, inCompany(companyId), window),
    count: (companyId) => countAll(context, USERS, inCompany(companyId)),
    lastId: (companyId) => lastIdOf(context, USERS, inCompany(companyId)),
  }
}
