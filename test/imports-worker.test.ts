import { once } from 'node:events'
import { Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { ManualClock } from '../src/clock.ts'
import { newId } from '../src/ids.ts'
import { runClaimedImport } from '../src/imports/run-import.ts'
import { BUSY_ATTEMPTS, ImportWorker } from '../src/imports/worker.ts'
import { type Store, StoreBusyError, StoreLockedError, StoreUnconfirmedError } from '../src/store/port.ts'
import { loadConfig } from '../src/config.ts'
import { startServer } from '../src/server.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { pausingBeforeFinish, pausingBeforePayloads } from './helpers/store-wrappers.ts'
import { tempDataDir } from './helpers/process.ts'
import { runEnvironment } from './helpers/test-store.ts'
import { type ImportHarness, startImportHarness } from './imports-support.ts'
import { until } from './helpers/kit-server.ts'
import { anImport } from './store/builders.ts'
import { gate } from './store/contract/support.ts'

let h: ImportHarness
beforeEach(async () => {
  h = await startImportHarness()
})
afterEach(async () => {
  await h.close()
})

const LEASE = 60_000
const putUsers = async (data: unknown[], key = h.key) => {
  const reply = await h.server.call('/v1/users/bulk', { method: 'PUT', key, body: { data } })
  expect(reply.status).toBe(200)
  return reply.body.import_id as string
}
/** The harness's store, whose `n`th transaction (from 1) the store is too busy for when `busyAt(n)`. */
const busyTransactions = (busyAt: (transaction: number) => boolean, busy = () => new StoreBusyError('MongoDB out of reach')): Store => {
  let transactions = 0
  return {
    ...h.store,
    transaction: (work, options) => (busyAt(++transactions) ? Promise.reject(busy()) : h.store.transaction(work, options)),
  }
}
const lockHeld = () => new StoreLockedError('another writer held the write lock for 10000 ms')
const at = (offset = 0) => new Date(h.server.clock.now().getTime() + offset).toISOString()
/** A worker that claims an import and then dies: it never finishes it nor renews its lease. */
const claimAndDie = (owner = 'dead-worker') => h.store.imports.claimNext(owner, at(), at(LEASE))

/** Three users calls in one import (a window of 60 s), each applied in a transaction of its own: their import ids. */
async function threeCallsInOneImport(): Promise<string[]> {
  const ids: string[] = []
  for (const name of ['A', 'B', 'C']) {
    const reply = await h.server.call('/v1/users/bulk?debounce=60', {
      method: 'PUT',
      key: h.key,
      body: { data: [{ email: `${name.toLowerCase()}@acme.example`, name }] },
    })
    ids.push(reply.body.import_id as string)
  }
  return ids
}

describe('the retention of finished imports (IMPORT_RETENTION_DAYS)', () => {
  it('deletes, from its first poll, the finished imports older than the retention by the service clock, and nothing else', async () => {
    const clock = h.server.clock as ManualClock
    const old = await putUsers([{ email: 'old@acme.example' }])
    expect(await h.drain()).toBe(1)
    clock.advance(2 * 86_400_000)
    const recent = await putUsers([{ email: 'recent@acme.example' }])
    expect(await h.drain()).toBe(1)
    const reply = await h.server.call('/v1/users/bulk?debounce=300', {
      method: 'PUT',
      key: h.key,
      body: { data: [{ email: 'waits@acme.example' }] },
    })
    const waiting = reply.body.import_id as string

    // Without a retention, a worker keeps everything.
    expect(await new ImportWorker({ store: h.store, clock, owner: 'keeping' }).purgeExpired()).toBe(0)
    const worker = new ImportWorker({ store: h.store, clock, owner: 'retaining', retentionDays: 1, pollMs: 10 })
    worker.start()
    try {
      await until(
        () => h.store.imports.get(h.companyId, old),
        (found) => found === null,
      )
    } finally {
      await worker.stop()
    }
    expect(await h.store.imports.get(h.companyId, old)).toBeNull()
    expect((await h.server.call(`/v1/imports/${old}`, { key: h.key })).status).toBe(404)
    expect((await h.importOf(recent)).status).toBe('finished')
    expect((await h.store.imports.get(h.companyId, waiting))?.status).toBe('scheduled')
  })
})

describe('the request ids remembered for calls sent again', () => {
  it('are forgotten past their hour by a polling worker, retention or not, for a company that sent no call since', async () => {
    const clock = h.server.clock as ManualClock
    const sentAt = at()
    const remembered = (idKey: string) => h.store.imports.remembersRequest(h.companyId, idKey, sentAt)
    for (const idKey of ['quiet-1', 'quiet-2']) {
      await h.store.imports.enqueue(
        anImport(h.companyId, sentAt),
        {
          id: newId(),
          company_id: h.companyId,
          items: [{ email: `${idKey}@acme.example` }],
          options: { all: false, keep_overrides: false },
          received_at: sentAt,
          bytes: 100,
          resend: { id_key: idKey, call_key: idKey },
        },
        sentAt,
      )
    }
    expect(await remembered('quiet-1')).toBe(true)
    // Within the hour, a worker keeps them.
    clock.advance(30 * 60_000)
    expect(await new ImportWorker({ store: h.store, clock, owner: 'early' }).forgetRequestIds()).toBe(0)
    expect(await remembered('quiet-2')).toBe(true)

    clock.advance(31 * 60_000)
    const worker = new ImportWorker({ store: h.store, clock, owner: 'forgetting', pollMs: 10 })
    worker.start()
    try {
      await until(
        () => remembered('quiet-2'),
        (found) => !found,
      )
    } finally {
      await worker.stop()
    }
    expect(await remembered('quiet-1')).toBe(false)
  })
})

describe('the retention of finished imports, failing', () => {
  it('says a deletion that failed, and goes on applying imports between its tries', async () => {
    const failing: Store = {
      ...h.store,
      imports: { ...h.store.imports, purgeFinished: () => Promise.reject(new StoreBusyError('another writer held the lock')) },
    }
    const said: string[] = []
    const logger = { info() {}, warn: (_details: object, message: string) => said.push(message), error() {} }
    const worker = new ImportWorker({ store: failing, clock: h.server.clock, owner: 'retaining', retentionDays: 1, pollMs: 10, logger })
    worker.start()
    try {
      const id = await putUsers([{ email: 'applied@acme.example' }])
      await until(
        () => h.store.imports.get(h.companyId, id),
        (found) => found?.status === 'finished',
      )
      expect((await h.importOf(id)).error).toBe(false)
    } finally {
      await worker.stop()
    }
    // Tried at the first poll, then not before a minute: said once.
    expect(said).toEqual([
      'import worker: deleting the imports past their retention, or the request ids past their hour, failed; tried again in a minute',
    ])
  })
})

describe("the companies' deletions left unfinished", () => {
  it('are looked for every hour by a worker that always has an import to run, not only once it runs out of them', async () => {
    let looks = 0
    const counting: Store = {
      ...h.store,
      companies: { ...h.store.companies, unfinishedDeletions: () => (looks++, h.store.companies.unfinishedDeletions()) },
    }
    let runs = 0
    // A busy worker: every run finds an import, so that it never waits for a poll.
    class BusyWorker extends ImportWorker {
      override async runOnce(): Promise<boolean> {
        runs++
        await sleep(5)
        return true
      }
    }
    const worker = new BusyWorker({ store: counting, clock: h.server.clock, owner: 'busy', pollMs: 10 })
    worker.start()
    try {
      // It looked at its first poll, then went on to the imports.
      await until(
        async () => runs,
        (count) => count > 0,
      )
      expect(looks).toBe(1)
      vi.useFakeTimers({ toFake: ['Date'] })
      vi.setSystemTime(Date.now() + 3_600_000)
      // The faked Date stands still: the wait is counted in turns of the (real) timers.
      for (let turn = 0; turn < 100; turn++) {
        if (looks > 1) break
        await sleep(10)
      }
      expect(looks).toBe(2)
    } finally {
      vi.useRealTimers()
      await worker.stop()
    }
  })
})

describe('the import worker', () => {
  it('applies a record import stored before imports stacked across tables (its table on the import, not the payload)', async () => {
    const deals = (await h.store.dataTables.getByKey(h.companyId, 'live', 'deals'))!
    const now = at()
    const legacy = await h.store.imports.enqueue(
      { ...anImport(h.companyId, now, 0, `records:${deals.id}`), target: 'records', table_id: deals.id, data_table_key: 'deals' },
      {
        id: newId(),
        company_id: h.companyId,
        items: [{ deal_id: 'OLD-1', deal_name: 'Queued before the upgrade' }],
        options: { all: false, keep_overrides: false },
        received_at: now,
        bytes: 0,
      },
      now,
    )
    expect(await h.drain()).toBe(1)
    const result = await h.importOf(legacy.id)
    expect(result).toMatchObject({
      status: 'finished',
      error: false,
      data_tables_details: [{ data_table_key: 'deals', number_of_records: 1, error: null }],
    })
    expect((await h.store.records.findByExternalIds(h.companyId, deals.id, ['OLD-1'])).get('OLD-1')?.values).toStrictEqual({
      deal_id: 'OLD-1',
      deal_name: 'Queued before the upgrade',
    })
  })

  it('deletes, unapplied, an import stored for a company deleted meanwhile (a call authenticated just before), and goes on', async () => {
    const other = await h.server.load(smallFixture('Other'))
    const company = (await h.store.companies.get(other.companyId))!
    const keptId = await putUsers([{ email: 'kept@acme.example', name: 'Kept' }])
    await h.store.companies.delete(company.id)
    // The race: the call's payload is stored after the deletion committed.
    const now = at()
    const orphan = await h.store.imports.enqueue(
      anImport(company.id, now, 0, 'users'),
      {
        id: newId(),
        company_id: company.id,
        items: [{ email: 'late@other.example' }],
        options: { all: false, keep_overrides: false },
        received_at: now,
        bytes: 40,
        resend: { id_key: 'late-request', call_key: 'late-call' },
      },
      now,
    )
    const discarded: unknown[] = []
    h.worker.on('discarded', (found) => discarded.push(found.id))
    expect(await h.drain()).toBe(2)
    expect(discarded).toEqual([orphan.id])
    // Nothing of it stays, its call's request id neither: no deletion of the company is to come.
    expect(await h.store.imports.get(company.id, orphan.id)).toBeNull()
    expect(await h.store.imports.list(company.id, { limit: 10 })).toStrictEqual([])
    expect(await h.store.imports.payloads(company.id, orphan.id)).toStrictEqual([])
    expect(await h.store.imports.remembersRequest(company.id, 'late-request', now)).toBe(false)
    expect(await h.store.companies.get(company.id)).toBeNull()
    expect(await h.store.users.count(company.id)).toBe(0)
    expect((await h.importOf(keptId)).status).toBe('finished')
    // Nothing is left to claim again and again.
    expect(await h.drain()).toBe(0)
  })

  it.each([
    ['busy', () => new StoreBusyError('another process holds the lock')],
    ['out of reach before it confirmed a claim', () => new StoreUnconfirmedError('no primary')],
  ])('says once that the store is %s while its polls keep finding it so, and again after a poll got through', async (_what, refusal) => {
    let refusals = 0
    const busyFor = (count: number) => (refusals = count)
    const { store, pollsFrom } = claimsFailing(() => (refusals-- > 0 ? refusal() : undefined))
    const warnings: string[] = []
    const logger = { info: () => undefined, error: () => undefined, warn: (_details: object, message: string) => warnings.push(message) }
    const worker = new ImportWorker({ store, clock: h.server.clock, logger, pollMs: 10, owner: 'busy-spells' })
    busyFor(5)
    worker.start()
    await pollsFrom(8)
    expect(warnings).toEqual(['import worker: the store is busy or out of reach; polling on until it answers'])
    busyFor(3)
    await pollsFrom(5)
    await worker.stop()
    expect(warnings).toHaveLength(2)
  })

  it('says once a failure its polls keep meeting (a corrupt file), again for another failure, and after a poll got through', async () => {
    const failures: Error[] = []
    const { store, pollsFrom } = claimsFailing(() => failures.shift())
    const errors: string[] = []
    const logger = {
      info: () => undefined,
      warn: () => undefined,
      error: (details: { err?: Error }, message: string) => errors.push(`${message}: ${details.err?.message}`),
    }
    const worker = new ImportWorker({ store, clock: h.server.clock, logger, pollMs: 10, owner: 'failing-spells' })
    failures.push(...Array.from({ length: 5 }, () => new Error('database disk image is malformed')), new Error('disk I/O error'))
    worker.start()
    await pollsFrom(9)
    expect(errors).toEqual([
      'import worker: polling failed: database disk image is malformed',
      'import worker: polling failed: disk I/O error',
    ])
    failures.push(new Error('disk I/O error'))
    await pollsFrom(4)
    await worker.stop()
    expect(errors).toHaveLength(3)
  })

  it('runs one import per company at a time; the others wait in scheduled, other companies go on', async () => {
    const globex = await h.server.load(smallFixture('Globex'))
    const first = await putUsers([{ email: 'a@acme.example' }])
    const second = await putUsers([{ email: 'b@acme.example' }])
    const theirs = await putUsers([{ email: 'a@globex.example' }], globex.apiKey)

    expect((await claimAndDie('worker-1'))?.id).toBe(first)
    expect((await h.importOf(first)).status).toBe('started')
    // A second worker skips the company that has an import running.
    expect((await h.store.imports.claimNext('worker-2', at(), at(LEASE)))?.id).toBe(theirs)
    expect(await h.store.imports.claimNext('worker-2', at(), at(LEASE))).toBeNull()
    expect((await h.importOf(second)).status).toBe('scheduled')
  })

  it('takes companies in turn: a company with many imports queued does not hold the others back until it is done', async () => {
    const globex = await h.server.load(smallFixture('Globex'))
    const ours = [await putUsers([{ email: 'a@acme.example' }]), await putUsers([{ email: 'b@acme.example' }])]
    ours.push(await putUsers([{ email: 'c@acme.example' }]))
    const theirs = await putUsers([{ email: 'a@globex.example' }], globex.apiKey)
    const worker = new ImportWorker({ store: h.store, clock: h.server.clock, owner: 'taking-turns' })
    const ran: string[] = []
    worker.on('finished', (finished: { id: string }) => ran.push(finished.id))
    while (await worker.runOnce()) {
      // one import a claim
    }
    expect(ran).toEqual([ours[0], theirs, ours[1], ours[2]])
  })

  it("runs a dead worker's import again once its lease expires, with the result of a single run", async () => {
    const id = await putUsers([{ email: 'a@acme.example', name: 'A' }])
    const claimed = await claimAndDie()
    expect(claimed).toMatchObject({ id, status: 'started', lease_owner: 'dead-worker', attempts: 1 })
    expect(await h.drain()).toBe(0)

    h.server.clock.advance(LEASE)
    expect(await h.drain()).toBe(1)
    const result = await h.importOf(id)
    expect(result).toMatchObject({
      status: 'finished',
      error: false,
      launched_at: '2026-06-01T00:00:00.000Z',
      finished_at: '2026-06-01T00:01:00.000Z',
    })
    expect((await h.store.imports.get(h.companyId, id))?.attempts).toBe(2)
    expect(await h.store.users.count(h.companyId)).toBe(4)
  })

  it('rolls back the run of a worker whose import was taken over: the payload takes effect once', async () => {
    const id = await putUsers([{ email: 'a@acme.example', name: 'A' }])
    const stale = (await claimAndDie())!
    h.server.clock.advance(LEASE)
    expect(await h.drain()).toBe(1)
    const appliedOnce = await h.user('a@acme.example')
    const finished = await h.store.imports.get(h.companyId, id)

    // The first worker wakes up and runs its copy: its finish is refused and everything it wrote is undone.
    h.server.clock.advance(LEASE)
    expect(await runClaimedImport(h.store, h.server.clock, stale, 'dead-worker')).toStrictEqual({ kind: 'lost' })
    expect(await h.user('a@acme.example')).toStrictEqual(appliedOnce)
    expect(await h.store.imports.get(h.companyId, id)).toStrictEqual(finished)
    expect(await h.store.users.count(h.companyId)).toBe(4)
  })

  it('commits a run during which its lease was renewed, in one go', async () => {
    let runs = 0
    const renewing = new ImportWorker({
      store: pausingBeforeFinish(h.store, async () => {
        runs++
        await sleep(100)
      }),
      clock: h.server.clock,
      // A renewal every 10 ms: several are made while the run's transaction is open.
      leaseMs: 30,
    })
    const id = await putUsers([{ email: 'a@acme.example', name: 'A' }])
    expect(await renewing.drain()).toBe(1)
    expect(runs).toBe(1)
    expect(await h.importOf(id)).toMatchObject({ status: 'finished', error: false })
    expect((await h.user('a@acme.example'))?.name).toBe('A')
  })

  it('commits nothing of a run that fails before its end, and finishes the import as refused', async () => {
    const failing = new ImportWorker({
      store: pausingBeforeFinish(h.store, async () => {
        throw new Error('disk on fire')
      }),
      clock: h.server.clock,
    })
    const id = await putUsers([{ email: 'a@acme.example' }])
    expect(await failing.drain()).toBe(1)
    expect(await h.user('a@acme.example')).toBeUndefined()
    const result = await h.importOf(id)
    expect(result).toMatchObject({ status: 'finished', error: true })
    expect(result.data_tables_details[0].error).toMatchObject({
      title: 'ValidationError',
      description: expect.stringContaining('internal error'),
    })
  })

  it('postpones a run the store was too busy for, and applies it at the next claim: never refused for it', async () => {
    const worker = new ImportWorker({ store: busyTransactions((transaction) => transaction === 1), clock: h.server.clock })
    const postponed: string[] = []
    worker.on('postponed', (claimed) => postponed.push(claimed.id))
    const id = await putUsers([{ email: 'a@acme.example', name: 'A' }])
    // Claimed twice: postponed, then applied.
    expect(await worker.drain()).toBe(2)
    expect(postponed).toEqual([id])
    expect(await h.importOf(id)).toMatchObject({ status: 'finished', error: false })
    expect((await h.user('a@acme.example'))?.name).toBe('A')
  })

  it('refuses an import the store stays too busy for, after BUSY_ATTEMPTS claims, so that the next ones run', async () => {
    const worker = new ImportWorker({ store: busyTransactions(() => true), clock: h.server.clock })
    const id = await putUsers([{ email: 'a@acme.example', name: 'A' }])
    expect(await worker.drain()).toBe(BUSY_ATTEMPTS)
    expect(await h.importOf(id)).toMatchObject({ status: 'finished', error: true })
    expect(await h.user('a@acme.example')).toBeUndefined()
  })

  it("never refuses an import for the embedded store's write lock held by another writer, however many runs find it held", async () => {
    const worker = new ImportWorker({
      store: busyTransactions((transaction) => transaction <= BUSY_ATTEMPTS + 2, lockHeld),
      clock: h.server.clock,
    })
    const id = await putUsers([{ email: 'a@acme.example', name: 'A' }])
    expect(await worker.drain()).toBe(BUSY_ATTEMPTS + 3)
    expect(await h.store.imports.get(h.companyId, id)).toMatchObject({ status: 'finished', error: false, attempts: BUSY_ATTEMPTS + 3 })
    expect((await h.user('a@acme.example'))?.name).toBe('A')
  })

  it('counts toward that limit only the runs the store was too busy for, not the claims of workers that died', async () => {
    const id = await putUsers([{ email: 'a@acme.example', name: 'A' }])
    for (let death = 0; death < BUSY_ATTEMPTS; death++) {
      await claimAndDie()
      h.server.clock.advance(LEASE)
    }
    const worker = new ImportWorker({ store: busyTransactions((transaction) => transaction === 1), clock: h.server.clock })
    expect(await worker.drain()).toBe(2)
    expect(await h.store.imports.get(h.companyId, id)).toMatchObject({ attempts: BUSY_ATTEMPTS + 2, busy_postponements: 1 })
    expect(await h.importOf(id)).toMatchObject({ status: 'finished', error: false })
    expect((await h.user('a@acme.example'))?.name).toBe('A')
  })

  it('counts only the busy runs since the import last made progress: a run that commits a part starts the count again', async () => {
    const ids = await threeCallsInOneImport()
    expect(new Set(ids).size).toBe(1)
    h.server.clock.advance(60_000)
    // Nine runs find the store busy; the tenth commits the first call, then finds it busy; the eleventh finishes.
    const busyAt = new Set([1, 2, 3, 4, 5, 6, 7, 8, 9, 11])
    const store: Store = { ...busyTransactions((transaction) => busyAt.has(transaction)), itemsPerTransaction: 1 }
    const worker = new ImportWorker({ store, clock: h.server.clock })
    expect(await worker.drain()).toBe(BUSY_ATTEMPTS + 1)
    expect(await h.importOf(ids[0])).toMatchObject({ status: 'finished', error: false })
    expect((await h.user('c@acme.example'))?.name).toBe('C')
  })

  it('leaves an import to its lease when a step committed unconfirmed, and runs it again after the steps that did commit', async () => {
    const ids = await threeCallsInOneImport()
    h.server.clock.advance(60_000)
    // The second step commits, and MongoDB goes out of reach before it confirms the commit.
    let transactions = 0
    const store: Store = {
      ...h.store,
      itemsPerTransaction: 1,
      transaction: async (work, options) => {
        const result = await h.store.transaction(work, options)
        if (++transactions === 2) throw new StoreUnconfirmedError('connection 11 to db-1:27017 closed')
        return result
      },
    }
    const worker = new ImportWorker({ store, clock: h.server.clock, leaseMs: LEASE })
    const events: string[] = []
    for (const event of ['postponed', 'finished', 'handedBack'] as const) worker.on(event, () => events.push(event))
    expect(await worker.drain()).toBe(1)
    expect(events).toEqual(['postponed'])
    expect(await h.store.imports.get(h.companyId, ids[0])).toMatchObject({ status: 'started', payloads_applied: 2 })
    expect(await worker.drain()).toBe(0)

    h.server.clock.advance(LEASE)
    expect(await worker.drain()).toBe(1)
    // One more transaction, for the third call: the steps that committed are not applied again.
    expect(transactions).toBe(3)
    expect(events).toEqual(['postponed', 'finished'])
    expect(await h.importOf(ids[0])).toMatchObject({ status: 'finished', error: false })
    expect((await h.user('c@acme.example'))?.name).toBe('C')
  })

  it('polls once started, and stop() lets the running import finish; start and stop are idempotent', async () => {
    let release!: () => void
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    let entered!: () => void
    const inside = new Promise<void>((resolve) => {
      entered = resolve
    })
    const worker = new ImportWorker({
      store: pausingBeforeFinish(h.store, async () => {
        entered()
        await released
      }),
      clock: h.server.clock,
      pollMs: 10,
    })
    expect(worker.isRunning()).toBe(false)
    worker.start()
    worker.start()
    expect(worker.isRunning()).toBe(true)
    const finished = once(worker, 'finished')
    const id = await putUsers([{ email: 'a@acme.example' }])
    await inside

    let stopped = false
    const stopping = worker.stop().then(() => {
      stopped = true
    })
    expect(worker.isRunning()).toBe(false)
    // Queue a turn of the event loop behind the stop: it cannot have finished while the import is held.
    await new Promise((resolve) => setImmediate(resolve))
    expect(stopped).toBe(false)
    release()
    await stopping
    const [result] = await finished
    expect(result).toMatchObject({ id, status: 'finished', error: false })
    expect((await h.importOf(id)).status).toBe('finished')
    await worker.stop()
    expect(worker.isRunning()).toBe(false)
  })

  it('hands the import it runs back when stopped, and another worker takes it at once, without waiting for the lease', async () => {
    const id = await putUsers([{ email: 'a@acme.example', name: 'A' }])
    const reading = gate()
    const release = gate()
    const leaving = new ImportWorker({
      store: pausingBeforePayloads(h.store, async () => {
        reading.open()
        await release.promise
      }),
      clock: h.server.clock,
      owner: 'leaving',
      pollMs: 10,
    })
    const handedBack = once(leaving, 'handedBack')
    leaving.start()
    // Mid-import: claimed, its payloads being read.
    await reading.promise
    expect(await h.store.imports.get(h.companyId, id)).toMatchObject({ status: 'started', lease_owner: 'leaving' })
    const stopping = leaving.stop()
    release.open()
    await stopping
    const [returned] = await handedBack
    expect(returned).toMatchObject({ id })
    expect(await h.store.imports.get(h.companyId, id)).toMatchObject({
      status: 'scheduled',
      lease_owner: null,
      lease_expires_at: null,
      attempts: 1,
    })
    expect(await h.user('a@acme.example')).toBeUndefined()

    // The clock has not moved: the lease the stopped worker took (60 s) would still hold it.
    expect(await h.drain()).toBe(1)
    expect(await h.importOf(id)).toMatchObject({ status: 'finished', error: false })
    expect((await h.store.imports.get(h.companyId, id))?.attempts).toBe(2)
    expect((await h.user('a@acme.example'))?.name).toBe('A')
  })

  it('leaves the import it runs to its lease when stopped and the store could not confirm the hand-back: never refused for it', async () => {
    const id = await putUsers([{ email: 'a@acme.example', name: 'A' }])
    const reading = gate()
    const release = gate()
    const paused = pausingBeforePayloads(h.store, async () => {
      reading.open()
      await release.promise
    })
    const leaving = new ImportWorker({
      // MongoDB out of reach as the stopping worker hands the import back: the write may or may not have been applied.
      store: {
        ...paused,
        imports: { ...paused.imports, release: () => Promise.reject(new StoreUnconfirmedError('connection 9 to db-1:27017 closed')) },
      },
      clock: h.server.clock,
      owner: 'leaving',
      pollMs: 10,
      leaseMs: LEASE,
    })
    const events: string[] = []
    for (const event of ['postponed', 'finished', 'handedBack'] as const) leaving.on(event, () => events.push(event))
    leaving.start()
    await reading.promise
    const stopping = leaving.stop()
    release.open()
    await stopping
    expect(events).toEqual(['postponed'])
    expect(await h.store.imports.get(h.companyId, id)).toMatchObject({ status: 'started', lease_owner: 'leaving' })
    expect(await h.user('a@acme.example')).toBeUndefined()

    h.server.clock.advance(LEASE)
    expect(await h.drain()).toBe(1)
    expect(await h.importOf(id)).toMatchObject({ status: 'finished', error: false })
    expect((await h.user('a@acme.example'))?.name).toBe('A')
  })

  it('release() hands a claimed import back to scheduled for another worker', async () => {
    const id = await putUsers([{ email: 'a@acme.example' }])
    await claimAndDie('leaving')
    expect(await h.store.imports.release(h.companyId, id, 'someone-else')).toBe(false)
    expect(await h.store.imports.release(h.companyId, id, 'leaving')).toBe(true)
    expect((await h.importOf(id)).status).toBe('scheduled')
    expect(await h.drain()).toBe(1)
    expect((await h.importOf(id)).status).toBe('finished')
  })
})

const quiet = () => new Writable({ write: (_chunk, _encoding, done) => done() })

describe('roles', () => {
  it('runs the worker inside the server by default, and none with role api', async () => {
    for (const [role, running] of [
      [undefined, true],
      ['api', false],
    ] as const) {
      const config = loadConfig(
        runEnvironment({ DATA_DIR: tempDataDir(), PORT: '0', DEMO: 'off', LOG_LEVEL: 'silent', IMPORT_POLL_MS: '10' }),
      )
      const server = await startServer(config, { role, out: quiet(), logStream: quiet() })
      try {
        expect(server.worker?.isRunning() ?? false).toBe(running)
      } finally {
        await server.close()
      }
      expect(server.worker?.isRunning() ?? false).toBe(false)
    }
  })
})

/** The store, each claim of which fails with what `failure` gives (none: the claim is made), and a wait for polls. */
function claimsFailing(failure: () => Error | undefined) {
  let claims = 0
  const store: Store = {
    ...h.store,
    imports: {
      ...h.store.imports,
      claimNext: (...args) => {
        claims++
        const error = failure()
        return error ? Promise.reject(error) : h.store.imports.claimNext(...args)
      },
    },
  }
  const pollsFrom = async (count: number) => {
    const target = claims + count
    const reached = () => claims >= target
    while (!reached()) await sleep(5)
  }
  return { store, pollsFrom }
}
