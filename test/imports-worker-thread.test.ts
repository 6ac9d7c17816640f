import { once } from 'node:events'
import { readdirSync, readFileSync } from 'node:fs'
import { DatabaseSync } from 'node:sqlite'
import { Writable } from 'node:stream'
import { afterEach, describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import { systemClock } from '../src/clock.ts'
import { QueueFullError } from '../src/errors.ts'
import { enqueueImport } from '../src/imports/enqueue.ts'
import { enqueueErrorOf, enqueueFailureOf, storeEnqueuingThrough, ThreadedImportWorker } from '../src/imports/threaded-worker.ts'
import { newId } from '../src/ids.ts'
import {
  ImportQueueFullError,
  type Store,
  StoreBusyError,
  StoreFullError,
  StoreUnconfirmedError,
  StoreUpgradedError,
} from '../src/store/port.ts'
import { ImportWorker, type WorkerLogger } from '../src/imports/worker.ts'
import { type RunningServer, startServer } from '../src/server.ts'
import type { DataImport } from '../src/store/model.ts'
import { openStore, sqliteFile } from '../src/store/open-store.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { anImport } from './store/builders.ts'
import { tempDataDir } from './helpers/process.ts'
import { call } from './helpers/server.ts'

const quiet = () => new Writable({ write: (_chunk, _encoding, done) => done() })

/** A log that keeps every line, as the server's logger would write it. */
function recordingLogger(): WorkerLogger & { lines: { level: string; details: object; message: string }[] } {
  const lines: { level: string; details: object; message: string }[] = []
  const keep = (level: string) => (details: object, message: string) => void lines.push({ level, details, message })
  return { lines, info: keep('info'), warn: keep('warn'), error: keep('error') }
}

async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 10))
}

let running: RunningServer | null = null
afterEach(async () => {
  await running?.close()
  running = null
})

/** A fresh DATA_DIR's configuration and store, with the small fixture's company loaded. */
async function loadedStore(env: Record<string, string> = {}) {
  const dataDir = tempDataDir()
  const config = loadConfig({
    DATA_DIR: dataDir,
    PORT: '0',
    DEMO: 'off',
    LOG_LEVEL: 'silent',
    IMPORT_POLL_MS: '10',
    RATE_LIMIT_PER_SECOND: '10000',
    ...env,
  })
  const store = await openStore(config)
  const loaded = await loadFixture(store, systemClock, smallFixture())
  const company = (await store.companies.get(loaded.company_id))!
  return { dataDir, config, store, company, companyId: company.id, key: loaded.api_keys[0] }
}

/** The nice value of a thread of this process (Linux): field 19 of its stat line. */
const niceOf = (task: string) => Number(readFileSync(`/proc/self/task/${task}/stat`, 'utf8').split(') ')[1].split(' ')[16])

/** `serve` on a fresh DATA_DIR with the small fixture loaded; returns the server and the company's key. */
async function serve(env: Record<string, string> = {}): Promise<{ server: RunningServer; key: string; dataDir: string }> {
  const { dataDir, config, store, key } = await loadedStore(env)
  await store.close()
  running = await startServer(config, { out: quiet(), logStream: quiet() })
  return { server: running, key, dataDir }
}

const putUser = async (url: string, key: string, email: string, query = '') => {
  const reply = await call(`${url}/v1/users/bulk${query}`, { method: 'PUT', key, body: { data: [{ email, name: 'Thread' }] } })
  expect(reply.status).toBe(200)
  return reply.body.import_id as string
}

describe('the import worker of serve runs in a thread of its own (IMPORT_WORKER=thread, the default)', () => {
  it('applies an import while the HTTP thread is blocked', async () => {
    const { server, key, dataDir } = await serve()
    expect(server.worker).toBeInstanceOf(ThreadedImportWorker)
    expect((server.worker as ThreadedImportWorker).threadId).toBeGreaterThan(0)
    // A window of a second: the import cannot run before the loop below has started.
    const id = await putUser(server.url, key, 'blocked@acme.example', '?debounce=1')

    // This thread (the server's) now spins without ever yielding: only a worker on another thread can finish it.
    const file = new DatabaseSync(sqliteFile({ dataDir }), { readOnly: true })
    const statusOf = file.prepare('SELECT status FROM imports WHERE id = ?')
    const giveUp = Date.now() + 15_000
    let status = ''
    while (status !== 'finished' && Date.now() < giveUp) status = String((statusOf.get(id) as { status: string }).status)
    file.close()
    expect(status).toBe('finished')
    expect((await call(`${server.url}/v1/imports/${id}`, { key })).body.data_import).toMatchObject({ status: 'finished', error: false })
  })

  it('emits the imports it finishes (for the metrics), writes its log through the given logger, and stops', async () => {
    const { config, store, company, companyId } = await loadedStore()
    const logger = recordingLogger()
    const worker = new ThreadedImportWorker({ config, logger })
    const finished: DataImport[] = []
    worker.on('finished', (done) => finished.push(done))
    try {
      await worker.start()
      expect(worker.isRunning()).toBe(true)
      const receipt = await enqueueImport(store, systemClock, {
        company,
        target: 'users',
        items: [{ email: 'metrics@acme.example' }],
        bytes: 40,
        queueLimitBytes: 1024,
      })
      await until(() => finished.length > 0)
      expect(finished[0]).toMatchObject({ id: receipt.import_id, status: 'finished', error: false })
      expect(logger.lines.map((line) => line.message)).toEqual(expect.arrayContaining(['import started', 'import finished']))
      expect(logger.lines.find((line) => line.message === 'import finished')?.details).toMatchObject({
        import_id: receipt.import_id,
        company_id: companyId,
      })
    } finally {
      await worker.stop()
      await store.close()
    }
    expect(worker.isRunning()).toBe(false)
    expect(worker.threadId).toBeNull()
  })

  it.skipIf(process.platform !== 'linux')(
    'gives way to the HTTP thread when the CPU is contended (Linux only: per-thread nice values)',
    async () => {
      const { config, store } = await loadedStore()
      const worker = new ThreadedImportWorker({ config, logger: recordingLogger() })
      try {
        await worker.start()
        const thread = readdirSync('/proc/self/task').find(
          (task) => readFileSync(`/proc/self/task/${task}/comm`, 'utf8').trim() === 'import-worker',
        )
        expect(thread).toBeDefined()
        expect(niceOf(thread!)).toBe(Math.min(19, niceOf(String(process.pid)) + 10))
      } finally {
        await worker.stop()
        await store.close()
      }
    },
  )

  it('starts a thread that died again, and its worker goes on', async () => {
    const { config, store, company } = await loadedStore()
    const logger = recordingLogger()
    const worker = new ThreadedImportWorker({
      config,
      logger,
      entry: new URL('./helpers/dying-worker-thread.ts', import.meta.url),
      restartDelayMs: 10,
    })
    try {
      await worker.start()
      const first = worker.threadId
      await until(() => logger.lines.some((line) => line.message.includes('stopped unexpectedly')))
      expect(logger.lines.find((line) => line.message === 'import worker thread failed')?.details).toMatchObject({
        err: expect.objectContaining({ message: 'a fault of ours in the worker thread' }),
      })
      await until(() => worker.isRunning())
      expect(worker.threadId).not.toBe(first)
      const finished = once(worker, 'finished')
      const receipt = await enqueueImport(store, systemClock, {
        company,
        target: 'users',
        items: [{ email: 'again@acme.example' }],
        bytes: 40,
        queueLimitBytes: 1024,
      })
      expect((await finished)[0]).toMatchObject({ id: receipt.import_id, status: 'finished' })
    } finally {
      await worker.stop()
      await store.close()
    }
  })
})

describe("the worker's thread stores the upserts' payloads for the HTTP thread", () => {
  it('answers with the import joined, refuses past the queue bound as the store does, and the store is used while the thread does not run', async () => {
    const { config, store, company, companyId } = await loadedStore()
    const worker = new ThreadedImportWorker({ config, logger: recordingLogger() })
    const through = storeEnqueuingThrough(store, () => worker)
    // A minute's window: the thread's worker leaves these imports queued.
    const upsert = (email: string, bytes: number) =>
      enqueueImport(through, systemClock, {
        company,
        target: 'users',
        items: [{ email }],
        bytes,
        queueLimitBytes: 1000,
        debounceSeconds: 60,
      })
    try {
      const before = await upsert('before@acme.example', 100)
      await worker.start()
      const joined = await upsert('joined@acme.example', 500)
      expect(joined.import_id).toBe(before.import_id)
      expect(await store.imports.payloads(companyId, joined.import_id)).toHaveLength(2)
      await expect(upsert('over@acme.example', 401)).rejects.toSatisfy(
        (error) => error instanceof QueueFullError && error.retryAfterSeconds >= 1,
      )
      expect(await store.imports.queuedBytes(companyId)).toBe(600)
      expect(await worker.enqueue(...enqueueArguments(companyId, 400))).toMatchObject({ id: joined.import_id, payload_bytes: 1000 })
      await expect(worker.enqueue(...enqueueArguments(companyId, 1))).rejects.toSatisfy(
        (error) => error instanceof ImportQueueFullError && error.queuedBytes === 1000,
      )
    } finally {
      await worker.stop()
    }
    await expect(worker.enqueue(...enqueueArguments(companyId, 1))).rejects.toThrow(/not running/)
    await upsert('after@acme.example', 0)
    expect(await store.imports.queuedBytes(companyId)).toBe(1000)
    await store.close()
  })

  it('rejects with StoreUnconfirmedError when the thread dies before it answered, its payload stored or not, for the HTTP thread to answer 503 "look first"', async () => {
    const { config, store, companyId } = await loadedStore()
    const worker = new ThreadedImportWorker({
      config,
      logger: recordingLogger(),
      entry: new URL('./helpers/dying-on-enqueue-worker-thread.ts', import.meta.url),
      restartDelayMs: 60_000,
    })
    await worker.start()
    try {
      // Before, a plain Error, answered 500 without a word on whether the call was stored.
      await expect(worker.enqueue(...enqueueArguments(companyId, 1))).rejects.toBeInstanceOf(StoreUnconfirmedError)
    } finally {
      await worker.stop()
      await store.close()
    }
  })

  it('rejects with StoreBusyError when another writer holds the lock past the wait, for the HTTP thread to answer 503', async () => {
    const { config, store, companyId } = await loadedStore()
    const worker = new ThreadedImportWorker({ config, logger: recordingLogger() })
    await worker.start()
    // Another process's write transaction, held past the thread's wait for the lock (10 s).
    // It waits its turn as any writer does: the thread's worker may be claiming at that moment.
    const holder = new DatabaseSync(sqliteFile(config), { timeout: 5000 })
    try {
      holder.exec('BEGIN IMMEDIATE')
      await expect(worker.enqueue(...enqueueArguments(companyId, 1))).rejects.toBeInstanceOf(StoreBusyError)
      holder.exec('ROLLBACK')
      expect(await store.imports.queuedBytes(companyId)).toBe(0)
    } finally {
      holder.close()
      await worker.stop()
      await store.close()
    }
  }, 60_000)

  it('is what the default start does: an upsert over HTTP is stored through the thread, and a full queue is a 429', async () => {
    const { server, key } = await serve({ IMPORT_QUEUE_LIMIT_MB: '1' })
    expect(server.app.store.imports.enqueue).not.toBe(server.store.imports.enqueue)
    const big = Array.from({ length: 8000 }, (_, index) => ({ deal_id: `T-${index}`, deal_name: `Deal ${index} ${'x'.repeat(60)}` }))
    const first = await call(`${server.url}/v1/tables/deals/records/bulk?debounce=60`, { method: 'POST', key, body: big })
    expect(first.status).toBe(200)
    const second = await call(`${server.url}/v1/tables/deals/records/bulk?debounce=60`, { method: 'POST', key, body: big })
    expect(second.status).toBe(429)
    expect(second.body.type).toBe('TooManyRequestsError')
    expect(Number(second.headers['retry-after'])).toBeGreaterThanOrEqual(1)
  })
})

/** The arguments of `ImportRepository.enqueue` for a users payload of `bytes`, in a window of a minute. */
function enqueueArguments(companyId: string, bytes: number): Parameters<Store['imports']['enqueue']> {
  const now = new Date().toISOString()
  const fresh = anImport(companyId, now, 1)
  const payload = {
    id: newId(),
    company_id: companyId,
    items: [{ email: 'direct@acme.example' }],
    options: { all: false, keep_overrides: false },
    received_at: now,
    bytes,
  }
  return [fresh, payload, now, 1000]
}

describe('the inline import worker (IMPORT_WORKER=inline)', () => {
  // The fallback for a store a thread cannot open (an in-memory one); selectable for any store.
  it('runs on the HTTP thread and applies imports', async () => {
    const { server, key } = await serve({ IMPORT_WORKER: 'inline' })
    expect(server.worker).toBeInstanceOf(ImportWorker)
    const id = await putUser(server.url, key, 'inline@acme.example')
    await until(async () => (await call(`${server.url}/v1/imports/${id}`, { key })).body.data_import.status === 'finished')
    expect((await call(`${server.url}/v1/users?limit=10`, { key })).body.data.map((user: { email: string }) => user.email)).toContain(
      'inline@acme.example',
    )
  })
})

describe("an enqueue's failure across the thread", () => {
  it('reaches the HTTP thread as the error it was, which it answers its own way (a busy store 503 "try again", a write maybe done 503 "look")', () => {
    for (const error of [
      new ImportQueueFullError(1234),
      new StoreFullError('no room'),
      new StoreBusyError('locked'),
      new StoreUnconfirmedError('out of reach before the answer'),
      new StoreUpgradedError('newer'),
    ]) {
      const crossed = enqueueErrorOf(structuredClone(enqueueFailureOf(error)))
      expect(crossed.constructor, error.name).toBe(error.constructor)
      expect(crossed.message).toBe(error.message)
    }
    const other = enqueueErrorOf(structuredClone(enqueueFailureOf(new TypeError('a bug'))))
    expect(other.message).toBe('the import worker thread could not store the payload: a bug')
  })
})
