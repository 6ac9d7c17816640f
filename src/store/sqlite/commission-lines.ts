import type { CommissionLine } from '../model.ts'
import type { CommissionLineRepository, LineFigures } from '../port.ts'
import type { Sql, SqlWriter } from './connection.ts'
import { lineCurrencies } from './currencies.ts'
import {
  countOfSequence,
  pageOfSequence,
  parseDocuments,
  placeholders,
  planResultConditions,
  type SequenceTable,
  slices,
} from './queries.ts'

const LINES_OF_TABLE: SequenceTable = { table: 'commission_lines', sequence: 'table_id' }

/** Lines are keyed by (company, table, id): naming the company's tables keeps a lookup by id a seek. */
const LINE_BY_ID = 'company_id = ? AND table_id IN (SELECT id FROM data_tables WHERE company_id = ?) AND id'

/**
 * Commission lines as JSON documents, keyed by (company, table, id). The plans' results are found by cell (plan,
 * user, period) or by record through the partial indexes of migration 5.
 */
export function sqliteCommissionLines(sql: Sql): CommissionLineRepository {
  return {
    async insertMany(lines) {
      // A loaded line's id taken is a conflict.
      await sql.write((db) => {
        for (const line of lines) insertLine(db, line, 'INSERT')
      })
    },
    page: (companyId, tableId, window) => pageOfSequence<CommissionLine>(sql, LINES_OF_TABLE, companyId, tableId, window),
    // The offset window walks the primary key (company, table, id) in order: no sort, and no row past the window
    // is read. Callers keep `offset` below the count (a v1 offset may be far larger than SQLite's integers).
    async list(companyId, tableId, window) {
      const rows = await sql.all(
        'SELECT doc FROM commission_lines WHERE company_id = ? AND table_id = ? ORDER BY id LIMIT ? OFFSET ?',
        companyId,
        tableId,
        window.limit,
        window.offset,
      )
      return parseDocuments<CommissionLine>(rows)
    },
    count: (companyId, tableId) => countOfSequence(sql, LINES_OF_TABLE, companyId, tableId),
    currenciesInUse: (companyId, tableId) => lineCurrencies(sql.remembering, companyId, tableId),
    async save(lines) {
      await sql.write((db) => {
        for (const line of lines) insertLine(db, line, 'INSERT OR REPLACE')
      })
    },
    async deleteMany(companyId, ids) {
      await sql.write((db) => {
        for (const slice of slices(ids))
          db.run(`DELETE FROM commission_lines WHERE ${LINE_BY_ID} IN (${placeholders(slice)})`, companyId, companyId, ...slice)
      })
    },
    async findOfPlan(companyId, planId, only) {
      const found: CommissionLine[] = []
      for (const condition of planResultConditions(only)) {
        const rows = await sql.all(
          `SELECT doc FROM commission_lines INDEXED BY commission_lines_plan_cell
           WHERE company_id = ? AND plan_id = ?${condition.sql} ORDER BY id`,
          companyId,
          planId,
          ...condition.params,
        )
        for (const line of parseDocuments<CommissionLine>(rows)) found.push(line)
      }
      return found
    },
    async figuresOfPlan(companyId, planId, cells, fields) {
      const found: LineFigures[] = []
      // SQLite reads the few fields from each document, so that JavaScript never parses the rest (the record's values).
      for (const condition of planResultConditions({ cells })) {
        const rows = await sql.values(
          `SELECT id, record_id, user_id, period, doc ->> '$.date', doc ->> '$.plan', doc ->> '$.commission', doc ->> '$.currency',
                  doc -> '$.metrics', doc -> ?, doc -> ?
           FROM commission_lines INDEXED BY commission_lines_plan_cell
           WHERE company_id = ? AND plan_id = ?${condition.sql} ORDER BY id`,
          `$.record_values.${fields.amount}`,
          `$.record_values.${fields.externalId}`,
          companyId,
          planId,
          ...condition.params,
        )
        for (const row of rows) {
          found.push({
            id: row[0] as string,
            record_id: row[1] as string,
            user_id: row[2] as string,
            period: row[3] as string,
            date: row[4] as string,
            plan: row[5] as string,
            commission: row[6] as number,
            currency: row[7] as string,
            metrics: JSON.parse(row[8] as string) as Record<string, unknown>,
            amount: row[9] === null ? null : JSON.parse(row[9] as string),
            external_id: row[10] === null ? null : JSON.parse(row[10] as string),
          })
        }
      }
      return found
    },
    async reprice(companyId, tableId, changes) {
      await sql.write((db) => {
        for (const change of changes) {
          db.run(
            `UPDATE commission_lines SET modified_at = ?,
               doc = json_set(doc, '$.commission', ?, '$.currency', ?, '$.metrics', json(?), '$.modified_at', ?)
             WHERE company_id = ? AND table_id = ? AND id = ?`,
            change.modified_at,
            change.commission,
            change.currency,
            JSON.stringify(change.metrics),
            change.modified_at,
            companyId,
            tableId,
            change.id,
          )
        }
      })
    },
    async findByRecords(companyId, recordIds) {
      const found: CommissionLine[] = []
      for (const slice of slices([...new Set(recordIds)])) {
        const rows = await sql.all(
          `SELECT doc FROM commission_lines INDEXED BY commission_lines_record
           WHERE company_id = ? AND record_id IN (${placeholders(slice)}) AND plan_id IS NOT NULL ORDER BY id`,
          companyId,
          ...slice,
        )
        for (const line of parseDocuments<CommissionLine>(rows)) found.push(line)
      }
      return found
    },
  }
}

function insertLine(db: SqlWriter, line: CommissionLine, verb: 'INSERT' | 'INSERT OR REPLACE'): void {
  db.run(
    `${verb} INTO commission_lines (company_id, table_id, id, modified_at, plan_id, user_id, period, record_id, doc)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    line.company_id,
    line.table_id,
    line.id,
    line.modified_at,
    line.plan_id,
    line.user_id,
    line.period,
    line.record_id,
    JSON.stringify(line),
  )
}
