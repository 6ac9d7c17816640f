import type { Company } from '../model.ts'
import type { CompanyRepository } from '../port.ts'
import type { Sql } from './connection.ts'
import { COMPANY_TABLES } from './migrations.ts'
import { parseDocument, parseDocuments } from './queries.ts'

export function sqliteCompanies(sql: Sql): CompanyRepository {
  return {
    async insert(company) {
      await sql.write((db) => db.run('INSERT INTO companies (id, doc) VALUES (?, ?)', company.id, JSON.stringify(company)))
    },
    async get(id) {
      return parseDocument<Company>(await sql.get('SELECT doc FROM companies WHERE id = ?', id))
    },
    async setExchangeRates(id, rates) {
      return sql.write((db) => {
        const company = parseDocument<Company>(db.all('SELECT doc FROM companies WHERE id = ?', id)[0])
        if (!company) return false
        db.run('UPDATE companies SET doc = ? WHERE id = ?', JSON.stringify({ ...company, exchange_rates: { ...rates } }), id)
        return true
      })
    },
    async list() {
      return parseDocuments<Company>(await sql.all('SELECT doc FROM companies ORDER BY id'))
    },
    recalculationsDue: async () =>
      (await sql.all('SELECT company_id, reason FROM recalculations_due ORDER BY company_id')).map((row) => ({
        company_id: row.company_id as string,
        reason: row.reason as string,
      })),
    takeRecalculationDue: (companyId) =>
      sql.write((db) => Number(db.run('DELETE FROM recalculations_due WHERE company_id = ?', companyId).changes) > 0),
    // Without `pause`, one write: the company and everything it holds go at once. With it, inside a transaction,
    // a write per table (a large company's records and lines take a second or two each), pausing between them.
    async delete(id, { pause } = {}) {
      if (pause) {
        for (const table of COMPANY_TABLES) {
          await sql.write((db) => db.run(`DELETE FROM ${table} WHERE company_id = ?`, id))
          await pause()
        }
      }
      return sql.write((db) => {
        if (!pause) for (const table of COMPANY_TABLES) db.run(`DELETE FROM ${table} WHERE company_id = ?`, id)
        return Number(db.run('DELETE FROM companies WHERE id = ?', id).changes) > 0
      })
    },
  }
}
