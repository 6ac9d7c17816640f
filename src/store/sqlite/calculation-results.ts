import type { CommissionLine, Plan, Statement } from '../model.ts'
import type { CalculationScope, CommissionLineRepository, LineFigures, PlanRepository, StatementRepository } from '../port.ts'
import type { Params, Sql, SqlWriter } from './connection.ts'
import { placeholders, slices } from './record-writes.ts'
import { REPLACE_STATEMENT, STATEMENT_COLUMNS, statementFromValues, statementParams } from './statement-rows.ts'

/**
 * What the calculation engine reads and writes (src/calculation/): plans, and the statements and lines they
 * produce, found by cell (plan, user, period) or by record through the partial indexes of migration 5.
 */

type StatementResults = Pick<StatementRepository, 'save' | 'deleteMany' | 'findOfPlan'>
type LineResults = Pick<CommissionLineRepository, 'save' | 'deleteMany' | 'findOfPlan' | 'findByRecords' | 'figuresOfPlan' | 'reprice'>

/** Statements are keyed by (company, environment, id): naming both environments keeps a lookup by id a seek. */
const STATEMENT_BY_ID = "company_id = ? AND environment IN ('live', 'sandbox') AND id"
/** Lines are keyed by (company, table, id): naming the company's tables keeps a lookup by id a seek. */
const LINE_BY_ID = 'company_id = ? AND table_id IN (SELECT id FROM data_tables WHERE company_id = ?) AND id'

/** The condition and parameters that limit a plan's results to a scope, in slices of the IN lists. */
function scopeConditions(only: CalculationScope | undefined): Array<{ sql: string; params: Params }> {
  if (!only) return [{ sql: '', params: [] }]
  const conditions: Array<{ sql: string; params: Params }> = []
  for (const slice of slices(only.cells ?? [])) {
    conditions.push({
      sql: ` AND (user_id, period) IN (VALUES ${slice.map(() => '(?, ?)').join(', ')})`,
      params: slice.flatMap((cell) => [cell.user_id, cell.period]),
    })
  }
  for (const slice of slices(only.userIds ?? [])) conditions.push({ sql: ` AND user_id IN (${placeholders(slice)})`, params: [...slice] })
  return conditions
}

export function sqliteStatementResults(sql: Sql): StatementResults {
  return {
    async save(statements: Statement[]) {
      // REPLACE deletes the stored row and inserts the new one: its rendering goes with it, as the port says.
      await sql.write((db) => {
        for (const statement of statements) db.run(REPLACE_STATEMENT, ...statementParams(statement))
      })
    },
    async deleteMany(companyId, ids) {
      await sql.write((db) => {
        for (const slice of slices(ids)) db.run(`DELETE FROM statements WHERE ${STATEMENT_BY_ID} IN (${placeholders(slice)})`, companyId, ...slice)
      })
    },
    async findOfPlan(companyId, planId, only) {
      const found: Statement[] = []
      for (const condition of scopeConditions(only)) {
        const rows = await sql.values(
          `SELECT ${STATEMENT_COLUMNS} FROM statements INDEXED BY statements_plan_cell
           WHERE company_id = ? AND plan_id = ?${condition.sql} ORDER BY id`,
          companyId,
          planId,
          ...condition.params,
        )
        for (const row of rows) found.push(statementFromValues(row))
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

/** Inserts loaded lines (`commissionLines.insertMany`): an id taken is a conflict. */
export function insertLines(db: SqlWriter, lines: readonly CommissionLine[]): void {
  for (const line of lines) insertLine(db, line, 'INSERT')
}

const parseLines = (rows: Array<Record<string, unknown>>) => rows.map((row) => JSON.parse(row.doc as string) as CommissionLine)
const parsePlan = (row: Record<string, unknown> | undefined) => (row ? (JSON.parse(row.doc as string) as Plan) : null)

export function sqliteLineResults(sql: Sql): LineResults {
  return {
    async save(lines: CommissionLine[]) {
      await sql.write((db) => {
        for (const line of lines) insertLine(db, line, 'INSERT OR REPLACE')
      })
    },
    async deleteMany(companyId, ids) {
      await sql.write((db) => {
        for (const slice of slices(ids)) db.run(`DELETE FROM commission_lines WHERE ${LINE_BY_ID} IN (${placeholders(slice)})`, companyId, companyId, ...slice)
      })
    },
    async findOfPlan(companyId, planId, only) {
      const found: CommissionLine[] = []
      for (const condition of scopeConditions(only)) {
        const rows = await sql.all(
          `SELECT doc FROM commission_lines INDEXED BY commission_lines_plan_cell
           WHERE company_id = ? AND plan_id = ?${condition.sql} ORDER BY id`,
          companyId,
          planId,
          ...condition.params,
        )
        for (const line of parseLines(rows)) found.push(line)
      }
      return found
    },
    async figuresOfPlan(companyId, planId, cells, fields) {
      const found: LineFigures[] = []
      // SQLite reads the few fields from each document, so that JavaScript never parses the rest (the record's values).
      for (const condition of scopeConditions({ cells })) {
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
        for (const line of parseLines(rows)) found.push(line)
      }
      return found
    },
  }
}

export function sqlitePlans(sql: Sql): PlanRepository {
  return {
    async save(plans) {
      await sql.write((db) => {
        for (const plan of plans) {
          db.run(
            `INSERT INTO plans (company_id, id, environment, name, doc) VALUES (?, ?, ?, ?, ?)
             ON CONFLICT (company_id, id) DO UPDATE SET environment = excluded.environment, name = excluded.name, doc = excluded.doc`,
            plan.company_id,
            plan.id,
            plan.environment,
            plan.name,
            JSON.stringify(plan),
          )
        }
      })
    },
    get: async (companyId, id) => parsePlan(await sql.get('SELECT doc FROM plans WHERE company_id = ? AND id = ?', companyId, id)),
    list: async (companyId) => (await sql.all('SELECT doc FROM plans WHERE company_id = ? ORDER BY id', companyId)).map((row) => parsePlan(row) as Plan),
    delete: (companyId, id) => sql.write((db) => Number(db.run('DELETE FROM plans WHERE company_id = ? AND id = ?', companyId, id).changes) > 0),
  }
}
