import type { QuotaValue } from '../model.ts'
import type { QuotaValueRepository } from '../port.ts'
import type { Sql } from './connection.ts'
import { countOfSequence, pageOfSequence, parseDocuments, type SequenceTable, slices } from './queries.ts'

const VALUES_OF_QUOTA: SequenceTable = { table: 'quota_values', sequence: 'quota_id' }

/** Quota values, keyed by (company, quota, id); a unique index refuses a second value of one (quota, user, period). */
export function sqliteQuotaValues(sql: Sql): QuotaValueRepository {
  return {
    async insertMany(values) {
      await sql.write((db) => {
        for (const value of values) {
          db.run(
            `INSERT INTO quota_values (company_id, quota_id, id, user_id, period, modified_at, doc)
             VALUES (?, ?, ?, ?, ?, ?, ?)`,
            value.company_id,
            value.quota_id,
            value.id,
            value.user_id,
            value.period,
            value.modified_at,
            JSON.stringify(value),
          )
        }
      })
    },
    page: (companyId, quotaId, window) => pageOfSequence<QuotaValue>(sql, VALUES_OF_QUOTA, companyId, quotaId, window),
    async findCells(companyId, quotaId, cells) {
      const found: QuotaValue[] = []
      for (const slice of slices(cells)) {
        const rows = await sql.all(
          `SELECT doc FROM quota_values INDEXED BY quota_values_cell
           WHERE company_id = ? AND quota_id = ? AND (user_id, period) IN (VALUES ${slice.map(() => '(?, ?)').join(', ')})`,
          companyId,
          quotaId,
          ...slice.flatMap((cell) => [cell.user_id, cell.period]),
        )
        found.push(...parseDocuments<QuotaValue>(rows))
      }
      return found
    },
    count: (companyId, quotaId) => countOfSequence(sql, VALUES_OF_QUOTA, companyId, quotaId),
  }
}
