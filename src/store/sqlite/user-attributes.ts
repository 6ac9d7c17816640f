import type { UserAttributeDefinition } from '../model.ts'
import type { UserAttributeRepository } from '../port.ts'
import type { Sql } from './connection.ts'
import { parseDocuments } from './queries.ts'

export function sqliteUserAttributes(sql: Sql): UserAttributeRepository {
  return {
    async insert(definition) {
      await sql.write((db) =>
        db.run(
          'INSERT INTO user_attributes (company_id, id, api_key, doc) VALUES (?, ?, ?, ?)',
          definition.company_id,
          definition.id,
          definition.api_key,
          JSON.stringify(definition),
        ),
      )
    },
    async list(companyId) {
      return parseDocuments<UserAttributeDefinition>(
        await sql.remembering.all('SELECT doc FROM user_attributes WHERE company_id = ? ORDER BY id', companyId),
      )
    },
  }
}
