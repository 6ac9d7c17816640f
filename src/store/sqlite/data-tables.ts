import type { DataTable } from '../model.ts'
import type { DataTableRepository } from '../port.ts'
import type { Sql } from './connection.ts'
import { parseDocument, parseDocuments } from './queries.ts'

export function sqliteDataTables(sql: Sql): DataTableRepository {
  return {
    async insert(table) {
      await sql.write((db) =>
        db.run(
          'INSERT INTO data_tables (company_id, id, environment, key, doc) VALUES (?, ?, ?, ?, ?)',
          table.company_id,
          table.id,
          table.environment,
          table.key,
          JSON.stringify(table),
        ),
      )
    },
    async get(companyId, id) {
      return parseDocument<DataTable>(
        await sql.remembering.get('SELECT doc FROM data_tables WHERE company_id = ? AND id = ?', companyId, id),
      )
    },
    async getByKey(companyId, environment, key) {
      return parseDocument<DataTable>(
        await sql.remembering.get(
          'SELECT doc FROM data_tables WHERE company_id = ? AND environment = ? AND key = ?',
          companyId,
          environment,
          key,
        ),
      )
    },
    async list(companyId) {
      return parseDocuments<DataTable>(await sql.remembering.all('SELECT doc FROM data_tables WHERE company_id = ? ORDER BY id', companyId))
    },
  }
}
