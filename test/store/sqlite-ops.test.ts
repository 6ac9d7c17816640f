import { once } from 'node:events'
import { existsSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { setImmediate } from 'node:timers/promises'
import { expect, it, vi } from 'vitest'
import { ManualClock } from '../../src/clock.ts'
import { loadFixture } from '../../src/fixtures/load-fixture.ts'
import { newId } from '../../src/ids.ts'
import { enqueueImport } from '../../src/imports/enqueue.ts'
import { ImportWorker } from '../../src/imports/worker.ts'
import type { DataTableRecord } from '../../src/store/model.ts'
import { rateSubjectKey, StoreBusyError } from '../../src/store/port.ts'
import { SWEEP_SLICE_ROWS } from '../../src/store/sqlite/companies.ts'
import { SqliteConnection, WAL_SIZE_LIMIT_BYTES } from '../../src/store/sqlite/connection.ts'
import { claimStatement } from '../../src/store/sqlite/imports.ts'
import { COMPANY_TABLES } from '../../src/store/sqlite/migrations.ts'
import { slices } from '../../src/store/sqlite/queries.ts'
import { rateLimitFile } from '../../src/store/sqlite/rate-limits.ts'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts'
import { smallFixture } from '../helpers/fixtures.ts'
import { until } from '../helpers/kit-server.ts'
import { aRecord, anImport } from './builders.ts'

// The SQLite adapter's own ways (the store contract runs in sqlite.test.ts).

/** Runs `body` with the path of a store file in a directory of its own, removed afterwards. */
async function withStoreFile(body: (file: string) => Promise<void>): Promise<void> {
  const directory = mkdtempSync(join(tmpdir(), 'store-'))
  try {
    await body(join(directory, 'commission-api.sqlite'))
  } finally {
    rmSync(directory, { recursive: true, force: true })
  }
}

it('cuts IN lists in slices of a power of two up to 512, padded with their last value: ten lengths, not one per list', () => {
  const lengths = new Set<number>()
  for (const count of [1, 2, 3, 5, 100, 257, 511, 512, 513, 1500]) {
    const values = Array.from({ length: count }, (_, index) => `v${index}`)
    const parts = slices(values)
    for (const part of parts) {
      lengths.add(part.length)
      expect(Number.isInteger(Math.log2(part.length)) && part.length <= 512).toBe(true)
      // Only the slice's own last value repeats, which changes no IN list's meaning.
      expect(new Set(part.slice(part.indexOf(part.at(-1)!)))).toEqual(new Set([part.at(-1)]))
    }
    expect([...new Set(parts.flat())]).toEqual(values)
  }
  expect([...lengths].toSorted((a, b) => a - b)).toEqual([1, 2, 4, 8, 128, 512])
  expect(slices([])).toEqual([])
})

/** The details of the plan SQLite makes for `sql` on a new store's schema (no statistics yet). */
async function queryPlan(sql: string): Promise<string[]> {
  let plan: string[] = []
  await withStoreFile(async (file) => {
    await openSqliteStore(file).close()
    const db = new DatabaseSync(file, { readOnly: true })
    try {
      plan = db
        .prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .all()
        .map((row) => String(row.detail))
    } finally {
      db.close()
    }
  })
  return plan
}

it("finds the imports past their retention through an index of their finish, not by reading every finished import's document", async () => {
  // As the adapter asks (purgeFinished): a missing index, or one the query cannot use, fails the statement.
  const plan = await queryPlan(
    `SELECT id FROM imports INDEXED BY imports_finished_at WHERE status = 'finished' AND doc ->> '$.finished_at' < '2026-01-01' LIMIT 10`,
  )
  expect(plan).toEqual([expect.stringContaining('USING INDEX imports_finished_at (<expr><?)')])
})

it("claims a drain's import through its company's part of the index, not by reading every company's queue", async () => {
  // Walking the queue by status would read, under the write lock, the imports every other company has waiting.
  const reads = (await queryPlan(claimStatement(true))).filter((detail) => /^(SEARCH|SCAN) (candidate|imports)\b/.test(detail))
  expect(reads).not.toEqual([])
  for (const read of reads) expect(read).toMatch(/USING (PRIMARY KEY \(id=\?\)|INDEX imports_queue \(company_id=\? AND status=\?\))$/)
})

it('keeps the counters in a file of their own beside the main file', async () => {
  const directory = mkdtempSync(join(tmpdir(), 'store-'))
  const store = openSqliteStore(join(directory, 'commission-api.sqlite'))
  try {
    await store.rateLimits.hit(rateSubjectKey({ companyId: 'c' }), 1000, new Date())
    expect(rateLimitFile(join(directory, 'commission-api.sqlite'))).toBe(join(directory, 'commission-api.rate-limits.sqlite'))
    expect(existsSync(join(directory, 'commission-api.rate-limits.sqlite'))).toBe(true)
  } finally {
    await store.close()
    rmSync(directory, { recursive: true, force: true })
  }
})

it("makes its directory and files its owner's only, as they hold every company's data and its keys' hashes", async () => {
  const parent = mkdtempSync(join(tmpdir(), 'store-'))
  const directory = join(parent, 'data')
  const store = openSqliteStore(join(directory, 'commission-api.sqlite'))
  try {
    await loadFixture(store, new ManualClock(), smallFixture())
    await store.rateLimits.hit(rateSubjectKey({ companyId: 'c' }), 1000, new Date())
    expect(statSync(directory).mode & 0o777).toBe(0o700)
    const files = readdirSync(directory)
    expect(files).toEqual(
      expect.arrayContaining(['commission-api.sqlite', 'commission-api.sqlite-wal', 'commission-api.rate-limits.sqlite']),
    )
    for (const file of files) expect(statSync(join(directory, file)).mode & 0o777, file).toBe(0o600)
  } finally {
    await store.close()
    rmSync(parent, { recursive: true, force: true })
  }
})

it("keeps the counters' WAL small: a checkpoint can reset it between hits", async () => {
  const directory = mkdtempSync(join(tmpdir(), 'store-'))
  const store = openSqliteStore(join(directory, 'commission-api.sqlite'))
  try {
    // 20,000 hits of 500 subjects, as one instance under load writes them; each hit a transaction of its own.
    for (let index = 0; index < 20_000; index++) {
      await store.rateLimits.hit(rateSubjectKey({ companyId: `c${index % 500}` }), 1000, new Date(1_000_000 + index))
    }
    // Left open by each hit, the WAL took about 4 KiB a hit (80 MB here); reset by checkpoints, a few pages.
    const wal = statSync(join(directory, 'commission-api.rate-limits.sqlite-wal')).size
    expect(wal).toBeLessThan(16 * 1024 * 1024)
  } finally {
    await store.close()
    rmSync(directory, { recursive: true, force: true })
  }
})

it('answers remembered reads (counts, configuration) afresh once another connection or its own has committed', async () => {
  const directory = mkdtempSync(join(tmpdir(), 'store-'))
  const file = join(directory, 'commission-api.sqlite')
  const here = openSqliteStore(file)
  const elsewhere = openSqliteStore(file)
  try {
    const loaded = await loadFixture(here, new ManualClock(), smallFixture())
    const companyId = loaded.company_id
    const [deals] = await here.dataTables.list(companyId)
    const before = await here.records.count(companyId, deals.id)
    expect(await here.metrics.list(companyId)).toHaveLength(3)
    // Another process writes: this one's next reads see it.
    await elsewhere.records.upsert(companyId, [recordOf(companyId, deals.id, 'NEW-1')])
    await elsewhere.metrics.insert({ ...(await elsewhere.metrics.list(companyId))[0], id: newId(), api_key: 'added' })
    expect(await here.records.count(companyId, deals.id)).toBe(before + 1)
    expect((await here.metrics.list(companyId)).map((metric) => metric.api_key)).toContain('added')
    // This one writes: so do the other's.
    await here.records.upsert(companyId, [recordOf(companyId, deals.id, 'NEW-2')])
    expect(await elsewhere.records.count(companyId, deals.id)).toBe(before + 2)
    expect(await here.records.count(companyId, deals.id)).toBe(before + 2)
    // What a read returns is the caller's own: changing it changes nothing remembered.
    const metrics = await here.metrics.list(companyId)
    metrics[0].api_key = 'changed by the caller'
    expect((await here.metrics.list(companyId))[0].api_key).not.toBe('changed by the caller')
  } finally {
    await here.close()
    await elsewhere.close()
    rmSync(directory, { recursive: true, force: true })
  }
})

it('answers remembered reads afresh after its own commits in memory, where one connection reads and writes', async () => {
  const store = openSqliteStore(':memory:')
  try {
    const { company_id: companyId } = await loadFixture(store, new ManualClock(), smallFixture())
    const [deals] = await store.dataTables.list(companyId)
    const before = await store.records.count(companyId, deals.id)
    await store.records.upsert(companyId, [recordOf(companyId, deals.id, 'NEW-1')])
    expect(await store.records.count(companyId, deals.id)).toBe(before + 1)
  } finally {
    await store.close()
  }
})

function recordOf(companyId: string, tableId: string, externalId: string): DataTableRecord {
  const at = '2026-06-01T00:00:00.000Z'
  return {
    id: newId(),
    company_id: companyId,
    table_id: tableId,
    external_id: externalId,
    values: {},
    overrides: {},
    created_at: at,
    modified_at: at,
  }
}

it('fails a write with StoreBusyError, writing nothing, when another connection holds the write lock past the wait', () =>
  withStoreFile(async (file) => {
    const store = openSqliteStore(file, { writeLockTimeoutMs: 200 })
    const holder = new DatabaseSync(file, { timeout: 5000 })
    try {
      holder.exec('BEGIN IMMEDIATE')
      const refused = await loadFixture(store, new ManualClock(), smallFixture()).then(
        () => null,
        (error: unknown) => error,
      )
      expect(refused).toBeInstanceOf(StoreBusyError)
      holder.exec('ROLLBACK')
      expect(await store.companies.list()).toEqual([])
      // Once the lock is free, the same write goes through.
      await loadFixture(store, new ManualClock(), smallFixture())
      expect(await store.companies.list()).toHaveLength(1)
    } finally {
      holder.close()
      await store.close()
    }
  }))

it('refuses every write, and its ping, once its file was removed or replaced under it: what it wrote would be lost at the next start', async () => {
  for (const change of ['removed', 'replaced'] as const) {
    await withStoreFile(async (file) => {
      const store = openSqliteStore(file)
      try {
        await loadFixture(store, new ManualClock(), smallFixture())
        await store.ping()
        if (change === 'removed') rmSync(file)
        else {
          // What a restore of a backup by `mv` over the running store's file does.
          new DatabaseSync(`${file}.new`).close()
          renameSync(`${file}.new`, file)
        }
        const refused = await loadFixture(store, new ManualClock(), smallFixture('Later')).then(
          () => null,
          (error: unknown) => error,
        )
        expect(refused, change).toBeInstanceOf(StoreBusyError)
        expect(String(refused)).toMatch(change === 'removed' ? /was removed while this process/ : /was replaced by another while/)
        await expect(store.ping(), change).rejects.toBeInstanceOf(StoreBusyError)
        // What it held is still read: reads go on as on a full disk.
        expect(await store.companies.list(), change).toHaveLength(1)
      } finally {
        await store.close()
      }
    })
  }
})

it('commits durably: the writer runs with synchronous = FULL, which survives a power loss as well as a crash', () =>
  withStoreFile(async (file) => {
    const connection = new SqliteConnection(file)
    try {
      // 2 is FULL; NORMAL (1) in WAL mode may lose the last commits on a power loss, which decisions.md rules out.
      expect(await connection.sql.write((db) => db.all('PRAGMA synchronous'))).toEqual([{ synchronous: 2 }])
      expect(await connection.sql.write((db) => db.all('PRAGMA journal_mode'))).toEqual([{ journal_mode: 'wal' }])
      // A checkpointed WAL is cut back, not kept at the size of the largest transaction it ever held.
      expect(await connection.sql.write((db) => db.all('PRAGMA journal_size_limit'))).toEqual([
        { journal_size_limit: WAL_SIZE_LIMIT_BYTES },
      ])
    } finally {
      connection.close()
    }
  }))

it('opens a store that is up to date while another process holds its write lock, and reads it', () =>
  withStoreFile(async (file) => {
    const first = openSqliteStore(file)
    await loadFixture(first, new ManualClock(), smallFixture())
    // Another process inside a long write transaction (an import, a reset of a large company).
    const holder = new DatabaseSync(file)
    holder.exec('BEGIN IMMEDIATE')
    holder.exec('DELETE FROM companies WHERE 0')
    try {
      const second = openSqliteStore(file)
      expect((await second.companies.list()).map((company) => company.name)).toEqual(['Acme'])
      await second.close()
    } finally {
      holder.exec('ROLLBACK')
      holder.close()
      await first.close()
    }
  }))

it('gives a claim up after CLAIM_LOCK_WAIT_MS of another connection holding the lock, shorter than a write waits', () =>
  withStoreFile(async (file) => {
    // Writes would wait a minute; the test's own timeout is far shorter.
    const store = openSqliteStore(file, { writeLockTimeoutMs: 60_000 })
    const holder = new DatabaseSync(file, { timeout: 5000 })
    try {
      holder.exec('BEGIN IMMEDIATE')
      const now = new Date().toISOString()
      await expect(store.imports.claimNext('worker', now, now)).rejects.toBeInstanceOf(StoreBusyError)
      holder.exec('ROLLBACK')
      expect(await store.imports.claimNext('worker', now, now)).toBeNull()
    } finally {
      holder.close()
      await store.close()
    }
  }))

it("gives the hourly upkeep's deletions up after CLAIM_LOCK_WAIT_MS too: a worker starting beside a long write claims on time", () =>
  withStoreFile(async (file) => {
    const store = openSqliteStore(file, { writeLockTimeoutMs: 60_000 })
    const holder = new DatabaseSync(file, { timeout: 5000 })
    try {
      // A request id past its hour, of a company that sent no call since: there is one to forget.
      const sentAt = '2026-06-01T00:00:00.000Z'
      const companyId = newId()
      await store.imports.enqueue(
        anImport(companyId, sentAt),
        {
          id: newId(),
          company_id: companyId,
          items: [{ email: 'quiet@acme.example' }],
          options: { all: false, keep_overrides: false },
          received_at: sentAt,
          bytes: 100,
          resend: { id_key: 'quiet', call_key: 'quiet' },
        },
        sentAt,
      )
      const later = '2026-06-01T02:00:00.000Z'
      holder.exec('BEGIN IMMEDIATE')
      // The worker runs them at its first poll, before its first claim, and again a minute after a failure.
      await expect(store.imports.forgetRequestIds(later, 1000)).rejects.toBeInstanceOf(StoreBusyError)
      await expect(store.imports.purgeFinished(later, 1000)).rejects.toBeInstanceOf(StoreBusyError)
      holder.exec('ROLLBACK')
      expect(await store.imports.forgetRequestIds(later, 1000)).toBe(1)
    } finally {
      holder.close()
      await store.close()
    }
  }))

it('deletes a company table by table inside a transaction when told to pause, pausing between tables', async () => {
  const store = openSqliteStore(':memory:')
  try {
    const { company_id: companyId } = await loadFixture(store, new ManualClock(), smallFixture())
    let pauses = 0
    await store.transaction(async (tx) => {
      await tx.companies.delete(companyId, {
        pause: async () => {
          pauses++
        },
      })
    })
    expect(pauses).toBeGreaterThan(10)
    expect(await store.companies.get(companyId)).toBeNull()
    expect(await store.users.count(companyId)).toBe(0)
  } finally {
    await store.close()
  }
})

it.each([
  ['when it starts', false],
  ['while it runs, at its look of the next hour', true],
])(
  "marks a company's deletion until its last row is gone: one a failure left is listed, and the import worker finishes it %s",
  (_case, running) =>
    withStoreFile(async (file) => {
      const store = openSqliteStore(file, { writeLockTimeoutMs: 200 })
      const holder = new DatabaseSync(file, { timeout: 5000 })
      const clock = new ManualClock()
      let looks = 0
      const counting = {
        ...store,
        companies: { ...store.companies, unfinishedDeletions: () => (looks++, store.companies.unfinishedDeletions()) },
      }
      const worker = new ImportWorker({ store: counting, clock, pollMs: 10 })
      try {
        const { company_id: doomed } = await loadFixture(store, clock, smallFixture())
        const { company_id: kept } = await loadFixture(store, clock, smallFixture())
        const [table] = await store.dataTables.list(doomed)
        const records = Array.from({ length: 3 * SWEEP_SLICE_ROWS }, (_, n) => aRecord(doomed, table.id, { external_id: `many-${n}` }))
        await store.records.upsert(doomed, records)
        const rowsOf = (companyId: string) =>
          COMPANY_TABLES.reduce(
            (sum, name) => sum + Number(holder.prepare(`SELECT count(*) AS n FROM ${name} WHERE company_id = ?`).get(companyId)?.n),
            0,
          )
        const keptRows = rowsOf(kept)
        if (running) {
          worker.start()
          await until(
            async () => looks,
            (count) => count > 0,
          )
        }

        // Another connection takes the write lock once the company is gone: the sweep's next write waits, then fails.
        const deletion = store.companies.delete(doomed).then(
          () => null,
          (error: unknown) => error,
        )
        while (await store.companies.get(doomed)) await setImmediate()
        expect(await store.companies.unfinishedDeletions()).toStrictEqual([doomed])
        holder.exec('BEGIN IMMEDIATE')
        expect(await deletion).toBeInstanceOf(StoreBusyError)
        holder.exec('ROLLBACK')
        expect(await store.companies.get(doomed)).toBeNull()
        expect(await store.apiKeys.list(doomed)).toStrictEqual([])
        expect(rowsOf(doomed)).toBeGreaterThan(0)
        expect(await store.companies.unfinishedDeletions()).toStrictEqual([doomed])

        const finished = once(worker, 'deletionFinished')
        // A running worker looked once, at its first poll, and looks again an hour after.
        expect(looks).toBe(running ? 1 : 0)
        if (running) {
          vi.useFakeTimers({ toFake: ['Date'] })
          vi.setSystemTime(Date.now() + 3_600_000)
        } else worker.start()
        expect(await finished).toStrictEqual([doomed])
        expect(rowsOf(doomed)).toBe(0)
        expect(await store.companies.unfinishedDeletions()).toStrictEqual([])
        expect(rowsOf(kept)).toBe(keptRows)
      } finally {
        vi.useRealTimers()
        await worker.stop()
        holder.close()
        await store.close()
      }
    }),
)

it("stops a worker's sweep of an unfinished deletion between two writes when the worker stops, its mark left", () =>
  withStoreFile(async (file) => {
    const store = openSqliteStore(file)
    const holder = new DatabaseSync(file, { timeout: 5000 })
    const clock = new ManualClock()
    // The worker is stopped once its sweep has begun (a stop during a large company's sweep); settles once it has.
    const stopped = Promise.withResolvers<void>()
    const stopping: typeof store = {
      ...store,
      companies: {
        ...store.companies,
        delete: (id, options) => {
          const sweep = store.companies.delete(id, options)
          stopped.resolve(worker.stop())
          return sweep
        },
      },
    }
    const worker = new ImportWorker({ store: stopping, clock, pollMs: 10 })
    try {
      const { company_id: doomed } = await loadFixture(store, clock, smallFixture())
      const [table] = await store.dataTables.list(doomed)
      const records = Array.from({ length: 5 * SWEEP_SLICE_ROWS }, (_, n) => aRecord(doomed, table.id, { external_id: `many-${n}` }))
      await store.records.upsert(doomed, records)
      // What a crash in a deletion's sweep leaves: the company gone, its mark, its rows.
      holder.exec(`DELETE FROM companies WHERE id = '${doomed}'; INSERT INTO company_deletions (company_id) VALUES ('${doomed}')`)

      worker.start()
      await stopped.promise
      expect(await store.companies.unfinishedDeletions()).toStrictEqual([doomed])
      expect(await store.records.count(doomed, table.id)).toBeGreaterThan(0)
      // Deleting the company again finishes it, as the next worker would.
      expect(await store.companies.delete(doomed)).toBe(false)
      expect(await store.companies.unfinishedDeletions()).toStrictEqual([])
      expect(await store.records.count(doomed, table.id)).toBe(0)
    } finally {
      await worker.stop()
      holder.close()
      await store.close()
    }
  }))

it('sweeps a call stored for a company while its deletion goes on (a key reused for half a second), with its import and request id', async () => {
  const store = openSqliteStore(':memory:')
  try {
    const clock = new ManualClock()
    const { company_id: doomed } = await loadFixture(store, clock, smallFixture())
    const company = await store.companies.get(doomed)
    const [table] = await store.dataTables.list(doomed)
    const records = Array.from({ length: 3 * SWEEP_SLICE_ROWS }, (_, n) => aRecord(doomed, table.id, { external_id: `many-${n}` }))
    await store.records.upsert(doomed, records)

    const deletion = store.companies.delete(doomed)
    while (await store.companies.get(doomed)) await setImmediate()
    // The imports' tables come after the records in the sweep: the call lands in tables not swept yet or swept already.
    const stored = await enqueueImport(store, clock, {
      company: company!,
      target: 'users',
      items: [{ email: 'late@example.com' }],
      bytes: 30,
      queueLimitBytes: 1024,
      resend: { id_key: 'request-1', call_key: 'call-1' },
    })
    expect(await store.imports.get(doomed, stored.import_id)).not.toBeNull()
    expect(await deletion).toBe(true)
    expect(await store.imports.get(doomed, stored.import_id)).toBeNull()
    expect(await store.imports.payloads(doomed, stored.import_id)).toStrictEqual([])
    expect(await store.imports.remembersRequest(doomed, 'request-1', clock.now().toISOString())).toBe(false)
    expect(await store.companies.unfinishedDeletions()).toStrictEqual([])
  } finally {
    await store.close()
  }
})
