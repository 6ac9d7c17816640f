import type { CommissionLine, Environment, Statement } from '../model.ts'
import type { OffsetWindow } from '../port.ts'
import type { Sql } from './connection.ts'
import { STATEMENT_COLUMNS, statementFromValues } from './statement-rows.ts'

/**
 * The offset windows of the v1 reporting lists. Both walk the primary key (company, scope, id) in order: no
 * sort, and no row past the window is read. Callers keep `offset` below the count (a v1 offset may be far
 * larger than SQLite's integers).
 */

export async function listStatements(sql: Sql, companyId: string, environment: Environment, window: OffsetWindow): Promise<Statement[]> {
  const rows = await sql.values(
    `SELECT ${STATEMENT_COLUMNS} FROM statements WHERE company_id = ? AND environment = ? ORDER BY id LIMIT ? OFFSET ?`,
    companyId,
    environment,
    window.limit,
    window.offset,
  )
  return rows.map(statementFromValues)
}

export async function listCommissionLines(sql: Sql, companyId: string, tableId: string, window: OffsetWindow): Promise<CommissionLine[]> {
  const rows = await sql.all(
    'SELECT doc FROM commission_lines WHERE company_id = ? AND table_id = ? ORDER BY id LIMIT ? OFFSET ?',
    companyId,
    tableId,
    window.limit,
    window.offset,
  )
  return rows.map((row) => JSON.parse(row.doc as string) as CommissionLine)
}
