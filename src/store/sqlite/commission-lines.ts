import type { CommissionLine } from '../model.ts'
import type { CommissionLineRepository, LineFigures } from '../port.ts'
import type { Sql, Values } from './connection.ts'
import { lineCurrencies } from './currencies.ts'
import { INSERT_LINE, LINE_BY_ID, LINE_COLUMNS, lineFromValues, lineParams, REPLACE_LINE } from './line-columns.ts'
import {
  countOfSequence,
  offsetWindow,
  pageClause,
  parseObject,
  placeholders,
  planResultConditions,
  type SequenceTable,
  slices,
} from './queries.ts'

const LINES_OF_TABLE: SequenceTable = { table: 'commission_lines', sequence: 'table_id' }

/**
 * Commission lines column by column (line-columns.ts), keyed by (company, table, id). The plans' results are
 * found by cell (plan, user, period) through a partial index.
 */
export function sqliteCommissionLines(sql: Sql): CommissionLineRepository {
  return {
    async insertMany(lines) {
      // A loaded line's id taken is a conflict.
      await sql.write((db) => {
        for (const line of lines) db.run(INSERT_LINE, ...lineParams(line))
      })
    },
    async page(companyId, tableId, window) {
      const clause = pageClause(window)
      const rows = await sql.values(
        `SELECT ${LINE_COLUMNS} FROM commission_lines WHERE company_id = ? AND table_id = ?${clause.sql}`,
        companyId,
        tableId,
        ...clause.params,
      )
      return linesOf(rows)
    },
    // The offset window walks the primary key (company, table, id) in order: no sort, and no row past the window is read.
    async list(companyId, tableId, window) {
      const query = offsetWindow(
        `SELECT ${LINE_COLUMNS} FROM commission_lines`,
        'company_id = ? AND table_id = ?',
        [companyId, tableId],
        window,
      )
      return linesOf(await sql.values(query.sql, ...query.params))
    },
    count: (companyId, tableId) => countOfSequence(sql, LINES_OF_TABLE, companyId, tableId),
    currenciesInUse: (companyId, tableId) => lineCurrencies(sql.remembering, companyId, tableId),
    async save(lines) {
      await sql.write((db) => {
        for (const line of lines) db.run(REPLACE_LINE, ...lineParams(line))
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
        const rows = await sql.values(
          `SELECT ${LINE_COLUMNS} FROM commission_lines INDEXED BY commission_lines_plan_cell
           WHERE company_id = ? AND plan_id = ?${condition.sql} ORDER BY id`,
          companyId,
          planId,
          ...condition.params,
        )
        for (const line of linesOf(rows)) found.push(line)
      }
      return found
    },
    async loadedNamed(companyId, environment, planName) {
      const query =
        'SELECT 1 AS found FROM commission_lines WHERE company_id = ? AND environment = ? AND plan = ? AND plan_id IS NULL LIMIT 1'
      return (await sql.get(query, companyId, environment, planName)) !== undefined
    },
    async figuresOfPlan(companyId, planId, cells, fields) {
      const found: LineFigures[] = []
      // SQLite reads the two values from the record's, so that JavaScript never parses the rest.
      for (const condition of planResultConditions({ cells })) {
        const rows = await sql.values(
          `SELECT id, record_id, user_id, period, date, plan, commission, currency, metrics, record_values -> ?, record_values -> ?
           FROM commission_lines INDEXED BY commission_lines_plan_cell
           WHERE company_id = ? AND plan_id = ?${condition.sql} ORDER BY id`,
          `$.${fields.amount}`,
          `$.${fields.externalId}`,
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
            metrics: parseObject(row[8]),
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
            `UPDATE commission_lines SET modified_at = ?, commission = ?, currency = ?, metrics = ?
             WHERE company_id = ? AND table_id = ? AND id = ?`,
            change.modified_at,
            change.commission,
            change.currency,
            JSON.stringify(change.metrics),
            companyId,
            tableId,
            change.id,
          )
        }
      })
    },
  }
}

const linesOf = (rows: Values[]): CommissionLine[] => rows.map(lineFromValues)
