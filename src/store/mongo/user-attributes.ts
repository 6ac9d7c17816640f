import type { UserAttributeDefinition } from '../model.ts'
import type { UserAttributeRepository } from '../port.ts'
import { USER_ATTRIBUTES } from './collections.ts'
import type { MongoContext } from './context.ts'
import { inCompany } from './filters.ts'
import { findAll, insertOne } from './operations.ts'

export function mongoUserAttributes(context: MongoContext): UserAttributeRepository {
  return {
    insert: (definition) => insertOne(context, USER_ATTRIBUTES, definition),
    list: (companyId) => findAll<UserAttributeDefinition>(context, USER_ATTRIBUTES, inCompany(companyId)),
  }
}
