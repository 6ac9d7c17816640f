import type { Sql } from './connection.ts'
import { parseDocuments } from './queries.ts'

/** What a company defines once and lists whole, each under its API key: custom metrics, user attributes. */
interface Definition {
  company_id: string
  id: string
  api_key: string
}

/** The repository of definitions kept as documents in `table`, listed in creation order (by id). */
export function sqliteDefinitions<Kept extends Definition>(sql: Sql, table: 'custom_metrics' | 'user_attributes') {
  return {
    async insert(definition: Kept): Promise<void> {
      await sql.write((db) =>
        db.run(
          `INSERT INTO ${table} (company_id, id, api_key, doc) VALUES (?, ?, ?, ?)`,
          definition.company_id,
          definition.id,
          definition.api_key,
          JSON.stringify(definition),
        ),
      )
    },
    async list(companyId: string): Promise<Kept[]> {
      return parseDocuments<Kept>(await sql.remembering.all(`SELECT doc FROM ${table} WHERE company_id = ? ORDER BY id`, companyId))
    },
  }
}
