import type { OffsetWindow, PlanResultSelection, RowWindow } from '../port.ts'
import type { Params, Row, Sql } from './connection.ts'

/**
 * What the repositories of the SQLite adapter share: reading the JSON documents rows keep, IN lists, and the
 * id-ordered windows of the v2 pages.
 */

/** The record a row keeps in its `doc` column; null when there is no row. */
export function parseDocument<T>(row: Row | undefined): T | null {
  return row ? (JSON.parse(row.doc as string) as T) : null
}

export function parseDocuments<T>(rows: Row[]): T[] {
  return rows.map((row) => JSON.parse(row.doc as string) as T)
}

/** A JSON object column: most rows' maps (metrics, dimensions) are empty, and an empty object needs no parser. */
export function parseObject(text: unknown): Record<string, unknown> {
  return text === '{}' ? {} : (JSON.parse(text as string) as Record<string, unknown>)
}

/** The INSERT of a row kept column by column (`columns`, comma-separated), and the INSERT OR REPLACE of one. */
export function insertsInto(table: string, columns: string): { insert: string; replace: string } {
  const insert = `INSERT INTO ${table} (${columns}) VALUES (${columns
    .split(',')
    .map(() => '?')
    .join(', ')})`
  return { insert, replace: insert.replace('INSERT INTO', 'INSERT OR REPLACE INTO') }
}

/** The `n` of a `SELECT count(*) AS n`. */
export function countOf(row: Row | undefined): number {
  return Number(row?.n ?? 0)
}

/** SQLite's IN lists are bounded by the number of bound parameters: work in slices well below it. */
const SLICE = 512

/**
 * `values` in slices for IN lists, each padded to a power of two by repeating its last value (which changes no IN
 * list's meaning). A connection keeps every statement it prepared, and an IN list of each length is a statement of
 * its own: a query run with every length from 1 to 500 kept about 16 MiB of statements a connection. Padded, a
 * query has at most ten.
 */
export function slices<T>(values: readonly T[]): T[][] {
  const result: T[][] = []
  for (let start = 0; start < values.length; start += SLICE) {
    const slice = values.slice(start, start + SLICE)
    const padded = 2 ** Math.ceil(Math.log2(slice.length))
    while (slice.length < padded) slice.push(slice.at(-1)!)
    result.push(slice)
  }
  return result
}

/** The `?, ?, ...` of an IN list of `values`. */
export const placeholders = (values: readonly unknown[]) => values.map(() => '?').join(', ')

/**
 * The query of an offset window over the rows `where` selects (with `params`), in id order: the rows after
 * `window.afterId` when the caller knows the row before the window (a seek in the primary key), else those after
 * `window.offset` rows. Callers keep `offset` below the count (a v1 offset may be far larger than SQLite's integers).
 */
export function offsetWindow(select: string, where: string, params: Params, window: OffsetWindow): { sql: string; params: Params } {
  return window.afterId === undefined
    ? { sql: `${select} WHERE ${where} ORDER BY id LIMIT ? OFFSET ?`, params: [...params, window.limit, window.offset] }
    : { sql: `${select} WHERE ${where} AND id > ? ORDER BY id LIMIT ?`, params: [...params, window.afterId, window.limit] }
}

/** The WHERE conditions and ORDER/LIMIT of an id-ordered page. */
export function pageClause(window: RowWindow): { sql: string; params: Params } {
  const conditions: string[] = []
  const params: Params = []
  if (window.afterId !== undefined) {
    conditions.push('id > ?')
    params.push(window.afterId)
  }
  if (window.modifiedAfter) {
    conditions.push(`modified_at ${window.modifiedAfter.inclusive ? '>=' : '>'} ?`)
    params.push(window.modifiedAfter.at)
  }
  if (window.modifiedBefore) {
    conditions.push(`modified_at ${window.modifiedBefore.inclusive ? '<=' : '<'} ?`)
    params.push(window.modifiedBefore.at)
  }
  const where = conditions.map((condition) => ` AND ${condition}`).join('')
  params.push(window.limit)
  return { sql: `${where} ORDER BY id LIMIT ?`, params }
}

/**
 * A table whose rows each belong to one sequence of the company that the v2 pages walk: a data table's commission
 * lines, a quota's values. (Statements, whose sequence is an environment, are kept column by column:
 * `statement-columns.ts`; so are lines, `line-columns.ts`.)
 */
export interface SequenceTable {
  table: 'commission_lines' | 'quota_values'
  /** The column that names the row's sequence. */
  sequence: 'table_id' | 'quota_id'
}

/** An id-ordered page of one sequence's rows kept as documents: a seek on the primary key (company, sequence, id). */
export async function pageOfSequence<T>(
  sql: Sql,
  { table, sequence }: SequenceTable,
  companyId: string,
  sequenceId: string,
  window: RowWindow,
): Promise<T[]> {
  const clause = pageClause(window)
  const rows = await sql.all(
    `SELECT doc FROM ${table} WHERE company_id = ? AND ${sequence} = ?${clause.sql}`,
    companyId,
    sequenceId,
    ...clause.params,
  )
  return parseDocuments<T>(rows)
}

export async function countOfSequence(
  sql: Sql,
  { table, sequence }: SequenceTable,
  companyId: string,
  sequenceId: string,
): Promise<number> {
  return countOf(
    await sql.remembering.get(`SELECT count(*) AS n FROM ${table} WHERE company_id = ? AND ${sequence} = ?`, companyId, sequenceId),
  )
}

/** The condition and parameters that limit a plan's results (statements or lines) to some cells or users, in slices of the IN lists. */
export function planResultConditions(only: PlanResultSelection | undefined): Array<{ sql: string; params: Params }> {
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
