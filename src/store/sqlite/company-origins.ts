import type { CompanyOrigin, CompanyOriginRepository } from '../company-origins.ts'
import type { Sql } from './connection.ts'

/** Company origins as JSON documents, one row per company (deleted with the company: `COMPANY_TABLES`). */
export function sqliteCompanyOrigins(sql: Sql): CompanyOriginRepository {
  return {
    async save(origin) {
      const doc = JSON.stringify(origin)
      await sql.write((db) =>
        db.run(
          'INSERT INTO company_origins (company_id, doc) VALUES (?, ?) ON CONFLICT (company_id) DO UPDATE SET doc = excluded.doc',
          origin.company_id,
          doc,
        ),
      )
    },
    async get(companyId) {
      const row = await sql.get('SELECT doc FROM company_origins WHERE company_id = ?', companyId)
      return row ? (JSON.parse(row.doc as string) as CompanyOrigin) : null
    },
  }
}
