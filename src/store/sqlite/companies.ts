import { setImmediate } from 'node:timers/promises'
import type { Company } from '../model.ts'
import type { CompanyRepository } from '../port.ts'
import type { Sql, SqlWriter } from './connection.ts'
import { COMPANY_TABLES } from './migrations.ts'
import { parseDocument, parseDocuments } from './queries.ts'

/**
 * How many rows of a deleted company one write of its sweep deletes at most: a few milliseconds of the thread each
 * (docs/performance.md, "A company's deletion in slices").
 */
export const SWEEP_SLICE_ROWS = 2000

/** What a deletion's first write takes with the company: its keys, and the rows that would act on it after it. */
const TAKEN_FIRST = ['api_keys', 'company_origins', 'recalculations_due']

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
    async delete(id, { pause, signal } = {}) {
      if (sql.inTransaction) return deleteInTransaction(sql, id, pause)
      // The company, its keys and the mark of its sweep at once: from this commit on, no request reaches its rows (every
      // request finds its company through them), and a crash leaves the mark, by which the sweep is finished.
      const existed = await sql.write((db) => {
        db.run('INSERT OR IGNORE INTO company_deletions (company_id) VALUES (?)', id)
        for (const table of TAKEN_FIRST) db.run(`DELETE FROM ${table} WHERE company_id = ?`, id)
        return Number(db.run('DELETE FROM companies WHERE id = ?', id).changes) > 0
      })
      // Then its rows, a slice a write, each write leaving the thread to others before the next: one write for all
      // held it for seconds (docs/performance.md).
      while (!(await sql.write((db) => sweptSlice(db, id)))) {
        signal?.throwIfAborted()
        await setImmediate()
      }
      return existed
    },
    unfinishedDeletions: async () =>
      (await sql.all('SELECT company_id FROM company_deletions ORDER BY company_id')).map((row) => row.company_id as string),
  }
}

/**
 * Inside a caller's transaction everything goes with it. Without `pause`, one write; with it, a write per table (a
 * large company's records and lines take a second or two each), pausing between them.
 */
async function deleteInTransaction(sql: Sql, id: string, pause: (() => Promise<void>) | undefined): Promise<boolean> {
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
}

/**
 * Deletes at most SWEEP_SLICE_ROWS rows of a deleted company, table after table, each write from the first table
 * again: the write that finds no row left in any table (a call an import stored during the sweep, in a table swept
 * already, included) removes the company's mark in the same commit, and answers true.
 */
function sweptSlice(db: SqlWriter, companyId: string): boolean {
  let left = SWEEP_SLICE_ROWS
  for (const table of COMPANY_TABLES) {
    left -= Number(db.run(sliceDeletion(db, table), companyId, left).changes)
    if (left === 0) return false
  }
  db.run('DELETE FROM company_deletions WHERE company_id = ?', companyId)
  return true
}

const sliceDeletions = new Map<string, string>()

/**
 * The deletion of at most `?` rows of a company from `table`, found by their primary key: most tables are WITHOUT
 * ROWID, and SQLite as Node builds it has no DELETE … LIMIT.
 */
function sliceDeletion(db: SqlWriter, table: string): string {
  let statement = sliceDeletions.get(table)
  if (statement === undefined) {
    const key = db
      .all(`PRAGMA table_info(${table})`)
      .filter((column) => Number(column.pk) > 0)
      .toSorted((a, b) => Number(a.pk) - Number(b.pk))
      .map((column) => column.name as string)
      .join(', ')
    statement = `DELETE FROM ${table} WHERE (${key}) IN (SELECT ${key} FROM ${table} WHERE company_id = ? LIMIT ?)`
    sliceDeletions.set(table, statement)
  }
  return statement
}
