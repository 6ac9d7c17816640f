import type { UserAttributeDefinition } from '../model.ts'
import type { UserAttributeRepository } from '../port.ts'
import type { Sql } from './connection.ts'
import { sqliteDefinitions } from './definitions.ts'

export function sqliteUserAttributes(sql: Sql): UserAttributeRepository {
  return sqliteDefinitions<UserAttributeDefinition>(sql, 'user_attributes')
}
