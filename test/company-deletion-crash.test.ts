import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { join, resolve } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { afterEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../src/clock.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import { SWEEP_SLICE_ROWS } from '../src/store/sqlite/companies.ts'
import { COMPANY_TABLES } from '../src/store/sqlite/migrations.ts'
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { CLI, tempDataDir } from './helpers/process.ts'
import { onMongo } from './helpers/test-store.ts'
import { aRecord } from './store/builders.ts'

const CRASH_DELETION = resolve(import.meta.dirname, 'helpers/crash-deletion.ts')

const children: ChildProcess[] = []

/** Starts a child on the embedded store of `env.DATA_DIR`; resolves once its output matches `pattern`. */
async function startChild(args: string[], env: Record<string, string>, pattern: RegExp): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  let output = ''
  child.stdout!.on('data', (chunk) => (output += chunk.toString()))
  child.stderr!.on('data', (chunk) => (output += chunk.toString()))
  for (;;) {
    if (pattern.test(output)) return child
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`child exited before printing ${pattern}:\n${output}`)
    await Promise.race([once(child.stdout!, 'data'), once(child.stderr!, 'data'), once(child, 'exit')])
  }
}

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await once(child, 'exit')
    }
  }
})

/** How many rows of the company each table of the store's file holds, read as another process would. */
function rowsOf(file: string, companyId: string): Record<string, number> {
  const db = new DatabaseSync(file, { readOnly: true })
  try {
    const rows = COMPANY_TABLES.map((table) => {
      const found = db.prepare(`SELECT count(*) AS n FROM ${table} WHERE company_id = ?`).get(companyId)
      return [table, Number(found?.n)] as const
    })
    return Object.fromEntries(rows.filter(([, count]) => count > 0))
  } finally {
    db.close()
  }
}

// Both stores mark a deletion until its rows are gone (the contract shows MongoDB's); this kills a process on the embedded store.
describe.skipIf(onMongo)('a company deletion killed midway (the embedded store)', () => {
  it(
    'leaves the company gone and its rows unreachable, and the next worker to start sweeps what was left',
    { timeout: 60_000 },
    async () => {
      const dataDir = tempDataDir()
      const file = join(dataDir, 'commission-api.sqlite')
      const store = openSqliteStore(file)
      const clock = new ManualClock()
      const { company_id: doomed } = await loadFixture(store, clock, smallFixture())
      const { company_id: kept } = await loadFixture(store, clock, smallFixture())
      const [table] = await store.dataTables.list(doomed)
      const records = Array.from({ length: 5 * SWEEP_SLICE_ROWS }, (_, n) => aRecord(doomed, table.id, { external_id: `many-${n}` }))
      await store.records.upsert(doomed, records)
      await store.close()
      const keptRows = rowsOf(file, kept)
      const env = { DATA_DIR: dataDir, DEMO: 'off', LOG_LEVEL: 'info', IMPORT_POLL_MS: '20' }

      const deleting = await startChild([CRASH_DELETION], { ...env, COMPANY_ID: doomed, TABLE_ID: table.id }, /paused mid-deletion/)
      deleting.kill('SIGKILL')
      await once(deleting, 'exit')

      // Killed between two writes of the sweep: the company and its keys went with the first, a part of its rows after.
      const reopened = openSqliteStore(file)
      try {
        expect(await reopened.companies.get(doomed)).toBeNull()
        expect(await reopened.apiKeys.list(doomed)).toStrictEqual([])
        expect(await reopened.companies.unfinishedDeletions()).toStrictEqual([doomed])
        const left = rowsOf(file, doomed)
        expect(left.data_table_records).toBeGreaterThan(0)
        expect(left.data_table_records).toBeLessThan(records.length + 2)
      } finally {
        await reopened.close()
      }

      // The real worker, at its start, finishes the deletion.
      const worker = await startChild(
        [CLI, 'serve', '--role', 'worker'],
        env,
        new RegExp(`"company_id":"${doomed}"[^\\n]*"msg":"company deletion left unfinished is finished"`),
      )
      expect(rowsOf(file, doomed)).toStrictEqual({})
      expect(rowsOf(file, kept)).toStrictEqual(keptRows)
      const again = openSqliteStore(file)
      expect(await again.companies.unfinishedDeletions()).toStrictEqual([])
      expect((await again.companies.list()).map((company) => company.id)).toStrictEqual([kept])
      await again.close()
      worker.kill('SIGTERM')
      const [code] = await once(worker, 'exit')
      expect(code).toBe(0)
    },
  )
})
