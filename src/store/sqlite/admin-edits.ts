import type { Params, Sql } from './connection.ts'
import type { CommissionLine, Statement } from '../model.ts'
import type { AdminEditRepository, CommissionLineChanges, StatementChanges } from '../admin-edits.ts'
import { definedChanges } from '../shared/defined-changes.ts'
import { LINE_BY_ID, LINE_COLUMNS, lineFromValues, lineParams, REPLACE_LINE } from './line-columns.ts'
import { REPLACE_STATEMENT, STATEMENT_BY_ID, STATEMENT_COLUMNS, statementFromValues, statementParams } from './statement-columns.ts'

/** Where one record of a company is, with the parameters of that condition before its id. */
interface Location {
  table: string
  where: (companyId: string) => { sql: string; params: Params }
  /** The table keeps `modified_at` in a column of its own (the v2 pages filter on it). */
  modifiedColumn: boolean
}

// Quota values are keyed by (company, quota, id): naming the company's quotas keeps the lookup a seek.
const QUOTA_VALUES: Location = {
  table: 'quota_values',
  where: (companyId) => ({
    sql: 'company_id = ? AND quota_id IN (SELECT id FROM quotas WHERE company_id = ?)',
    params: [companyId, companyId],
  }),
  modifiedColumn: true,
}
const STRUCTURES: Location = {
  table: 'reporting_structures',
  where: (companyId) => ({ sql: 'company_id = ?', params: [companyId] }),
  modifiedColumn: false,
}
const METRICS: Location = {
  table: 'custom_metrics',
  where: (companyId) => ({ sql: 'company_id = ?', params: [companyId] }),
  modifiedColumn: false,
}

/** Statements are kept column by column (statement-columns.ts): read, change and replace the row, in one write. */
function updateStatement(sql: Sql, companyId: string, id: string, changes: StatementChanges): Promise<Statement | null> {
  return sql.write((db) => {
    const [values] = db.values(`SELECT ${STATEMENT_COLUMNS} FROM statements WHERE ${STATEMENT_BY_ID} = ?`, companyId, id)
    if (!values) return null
    const changed: Statement = { ...statementFromValues(values), ...definedChanges(changes) }
    db.run(REPLACE_STATEMENT, ...statementParams(changed))
    return changed
  })
}

/** Lines are kept column by column (line-columns.ts): read, change and replace the row, in one write. */
function updateLine(sql: Sql, companyId: string, id: string, changes: CommissionLineChanges): Promise<CommissionLine | null> {
  return sql.write((db) => {
    const [values] = db.values(`SELECT ${LINE_COLUMNS} FROM commission_lines WHERE ${LINE_BY_ID} = ?`, companyId, companyId, id)
    if (!values) return null
    const changed: CommissionLine = { ...lineFromValues(values), ...definedChanges(changes) }
    db.run(REPLACE_LINE, ...lineParams(changed))
    return changed
  })
}

/** Reads the record's document, applies the changes and writes it back, in one write. */
function update<T>(sql: Sql, location: Location, companyId: string, id: string, changes: { modified_at: string }): Promise<T | null> {
  return sql.write((db) => {
    const where = location.where(companyId)
    const condition = `${where.sql} AND id = ?`
    const stored = db.all(`SELECT doc FROM ${location.table} WHERE ${condition}`, ...where.params, id)[0]
    if (!stored) return null
    const changed = { ...(JSON.parse(stored.doc as string) as T), ...definedChanges(changes) }
    const doc = JSON.stringify(changed)
    if (location.modifiedColumn) {
      db.run(`UPDATE ${location.table} SET doc = ?, modified_at = ? WHERE ${condition}`, doc, changes.modified_at, ...where.params, id)
    } else {
      db.run(`UPDATE ${location.table} SET doc = ? WHERE ${condition}`, doc, ...where.params, id)
    }
    return changed
  })
}

export function sqliteAdminEdits(sql: Sql): AdminEditRepository {
  return {
    updateStatement: (companyId, id, changes) => updateStatement(sql, companyId, id, changes),
    updateCommissionLine: (companyId, id, changes) => updateLine(sql, companyId, id, changes),
    updateQuotaValue: (companyId, id, changes) => update(sql, QUOTA_VALUES, companyId, id, changes),
    updateStructure: (companyId, id, changes) => update(sql, STRUCTURES, companyId, id, changes),
    updateMetric: (companyId, id, changes) => update(sql, METRICS, companyId, id, changes),
  }
}
