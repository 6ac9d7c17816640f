import { rmSync } from 'node:fs'
import { Writable } from 'node:stream'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clockFor } from '../src/clock.ts'
import { loadConfig } from '../src/config.ts'
import { ImportWorker } from '../src/imports/worker.ts'
import { type RunningServer, startServer } from '../src/server.ts'
import type { Store } from '../src/store/port.ts'
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import { plannedFixture } from './helpers/fixtures.ts'
import { KIT_ADMIN_TOKEN, KIT_DEMO_KEY, until } from './helpers/kit-server.ts'
import { runCliAsync, type ServerProcess, startServerProcess, tempDataDir } from './helpers/process.ts'
import { call } from './helpers/server.ts'
import { pausingBeforePayloads } from './helpers/store-wrappers.ts'

const admin = (url: string, path: string, body?: unknown) =>
  call(url + path, { method: body === undefined ? 'GET' : 'POST', body, headers: { authorization: `Bearer ${KIT_ADMIN_TOKEN}` } })
const now = async (url: string) => Date.parse((await admin(url, '/admin/clock')).body.now)

/**
 * The controlled clock across processes sharing one store: an API instance (`--role api`), a server whose import
 * worker runs in its thread, and the CLI. The offset is in the store and every request reads it first, so a move
 * answered by one process is seen by every request that any process receives after that answer.
 */
describe('the controlled clock, across processes', () => {
  const dataDir = tempDataDir()
  const env = { DATA_DIR: dataDir, CLOCK: 'controlled', ADMIN_TOKEN: KIT_ADMIN_TOKEN, IMPORT_POLL_MS: '50' }
  let api: ServerProcess
  let full: ServerProcess
  let apiUrl: string
  let fullUrl: string

  beforeAll(async () => {
    full = startServerProcess({ ...env, DEMO: 'on', DEMO_API_KEY: KIT_DEMO_KEY, IMPORT_WORKER: 'thread' })
    fullUrl = (await full.waitFor(/listening on (http:\S+)/))[1]
    api = startServerProcess({ ...env, DEMO: 'off' }, ['serve', '--role', 'api'])
    apiUrl = (await api.waitFor(/listening on (http:\S+)/))[1]
  }, 60_000)

  afterAll(async () => {
    await api?.stop()
    await full?.stop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('is moved by one process and seen at once by the others', async () => {
    expect(Math.abs((await now(apiUrl)) - (await now(fullUrl)))).toBeLessThan(2000)
    for (let round = 0; round < 5; round++) {
      const [from, to] = round % 2 === 0 ? [apiUrl, fullUrl] : [fullUrl, apiUrl]
      const moved = Date.parse((await admin(from, '/admin/clock', { advance_ms: 3_600_000 })).body.now)
      // The next request, to the other process, already tells the moved time.
      expect(await now(to)).toBeGreaterThanOrEqual(moved)
    }
    const cli = await runCliAsync(['clock', 'advance', '86400000', '--json'], env)
    expect(cli.code, cli.stderr).toBe(0)
    const movedByCli = Date.parse(JSON.parse(cli.stdout).now)
    expect(movedByCli - Date.now()).toBeGreaterThanOrEqual(5 * 3_600_000 + 86_400_000 - 2000)
    expect(await now(apiUrl)).toBeGreaterThanOrEqual(movedByCli)
    expect(await now(fullUrl)).toBeGreaterThanOrEqual(movedByCli)

    const target = new Date(movedByCli + 86_400_000).toISOString()
    const set = await runCliAsync(['clock', 'set', target], env)
    expect(set.code, set.stderr).toBe(0)
    expect(set.stdout).toMatch(/\(controlled\)/)
    expect(await now(apiUrl)).toBeGreaterThanOrEqual(Date.parse(target))
    const back = await runCliAsync(['clock', 'set', new Date(movedByCli).toISOString()], env)
    expect(back.code).toBe(1)
    expect(back.stderr).toContain('never goes back')
    const shown = await runCliAsync(['clock', '--json'], env)
    expect(Date.parse(JSON.parse(shown.stdout).now)).toBeGreaterThanOrEqual(Date.parse(target))
    // The system clock is not moved by anyone.
    const system = await runCliAsync(['clock', 'advance', '1000'], { ...env, CLOCK: 'system' })
    expect(system.code).toBe(1)
    expect(system.stderr).toContain('CLOCK=controlled')
  })

  it('closes a debounce window received by one process for the worker thread of another', async () => {
    const before = await now(apiUrl)
    const upsert = await call(`${apiUrl}/v1/users/bulk?debounce=300`, {
      method: 'PUT',
      key: KIT_DEMO_KEY,
      body: { data: [{ email: 'across@demo.example' }] },
    })
    expect(upsert.status).toBe(200)
    const read = async () => (await call(`${apiUrl}/v1/imports/${upsert.body.import_id}`, { key: KIT_DEMO_KEY })).body.data_import
    const scheduled = await read()
    expect(scheduled.status).toBe('scheduled')
    expect(Date.parse(scheduled.created_at)).toBeGreaterThanOrEqual(before)

    await admin(fullUrl, '/admin/clock', { advance_ms: 300_000 })
    const done = await until(read, (data) => data.status === 'finished')
    expect(done).toMatchObject({ status: 'finished', error: false })
    expect(Date.parse(done.finished_at) - Date.parse(done.created_at)).toBeGreaterThanOrEqual(300_000)
  })
})

/**
 * A move answered while another process's worker runs an import it claimed before the move: what the import writes
 * is stamped with the moved time, or an incremental v2 sync that walked after the move (its mark taken from the
 * `Date` header, less a margin) would miss it for good.
 */
describe('a move while another process runs an import', () => {
  let server: RunningServer | undefined
  let workerStore: Store | undefined
  afterAll(async () => {
    await server?.close()
    await workerStore?.close()
  })

  it('stamps what the import writes with the moved time, so that a sync walked after the move sees it', async () => {
    const dir = tempDataDir()
    const config = loadConfig({
      PORT: '0',
      LOG_LEVEL: 'silent',
      CLOCK: 'controlled',
      ADMIN_TOKEN: KIT_ADMIN_TOKEN,
      DEMO: 'off',
      DATA_DIR: dir,
    })
    server = await startServer(config, { role: 'api', out: null })
    const url = server.url
    const created = await admin(url, '/admin/companies', plannedFixture('Moved', []))
    expect(created.status, created.text).toBe(201)
    const api = (path: string, options = {}) => call(url + path, { key: created.body.api_key, ...options })
    const structure = (await api('/v2/data-structures')).body.data.find((found: { type: string }) => found.type === 'statement_reporting')
    const statements = new URL(structure.links.records).pathname

    // The worker of another process on the same file (as `serve --role worker`), held once it has claimed.
    workerStore = openSqliteStore(join(dir, 'commission-api.sqlite'))
    const { promise: held, resolve: release } = Promise.withResolvers<void>()
    const { promise: claimed, resolve: markClaimed } = Promise.withResolvers<void>()
    const worker = new ImportWorker({
      store: pausingBeforePayloads(workerStore, async () => {
        markClaimed()
        await held
      }),
      clock: await clockFor('controlled', workerStore.clockOffset),
      owner: 'another-process',
    })
    const upsert = await api('/v1/tables/deals/records/bulk', {
      method: 'POST',
      body: [{ id: 'D-1', name: 'Deal 1', owner: 'seller@planned.example', closed: '2026-05-10', amount: 1000, amount_currency: 'EUR' }],
    })
    expect(upsert.status).toBe(200)
    const run = worker.runOnce()
    await claimed

    // 30 s ahead (less than the lease, so the worker keeps its import); then a sync walks while the import runs.
    const moved = await admin(url, '/admin/clock', { advance_ms: 30_000 })
    expect(moved.status).toBe(200)
    const walk = await api(statements)
    expect(walk.body.data).toEqual([])
    const mark = new Date(Date.parse(String(walk.headers.date)) - 5000).toISOString()
    release()
    expect(await run).toBe(true)
    const finished = (await api(`/v1/imports/${upsert.body.import_id}`)).body.data_import
    expect(finished.status).toBe('finished')
    expect(Date.parse(finished.finished_at)).toBeGreaterThanOrEqual(Date.parse(moved.body.now))
    const since = await api(`${statements}?last_modified_after=${mark}`)
    expect(since.body.data).toHaveLength(1)
  })
})

/** What a server of role api, started with `clock` on the store in `dir`, logs as it starts. */
async function startLog(dir: string, clock: 'system' | 'controlled'): Promise<string> {
  let text = ''
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      text += chunk.toString()
      done()
    },
  })
  const config = loadConfig({ PORT: '0', LOG_LEVEL: 'info', CLOCK: clock, DEMO: 'off', DATA_DIR: dir, IMPORT_WORKER: 'inline' })
  const server = await startServer(config, { role: 'api', out: null, logStream })
  await server.close()
  return text
}

describe('a process on the system clock beside processes on the controlled one', () => {
  it("is warned at start when the store's controlled clock was moved: the instances would disagree on every window", async () => {
    const dir = tempDataDir()
    expect(await startLog(dir, 'system')).not.toContain('CLOCK=system')
    const store = openSqliteStore(join(dir, 'commission-api.sqlite'))
    await store.clockOffset.advance(60_000)
    await store.close()
    expect(await startLog(dir, 'system')).toContain("this process runs CLOCK=system, and the store's controlled clock was moved")
    expect(await startLog(dir, 'controlled')).not.toContain('CLOCK=system')
  })

  it('runs the imports a controlled clock moved a year ahead left waiting, once the store is used on the system clock', async () => {
    const base = {
      PORT: '0',
      LOG_LEVEL: 'silent',
      ADMIN_TOKEN: KIT_ADMIN_TOKEN,
      DEMO: 'off',
      DATA_DIR: tempDataDir(),
      IMPORT_POLL_MS: '50',
    }
    // An API instance alone: its call waits, in a window that ends a year and ten minutes ahead of the system's time.
    const ahead = await startServer(loadConfig({ ...base, CLOCK: 'controlled' }), { role: 'api', out: null })
    const created = await admin(ahead.url, '/admin/companies', plannedFixture('Ahead', []))
    expect(created.status, created.text).toBe(201)
    expect((await admin(ahead.url, '/admin/clock', { advance_ms: 365 * 86_400_000 })).status).toBe(200)
    const upsert = (url: string, path: string, email: string) =>
      call(`${url}/v1/users/bulk${path}`, { method: 'PUT', key: created.body.api_key, body: { data: [{ email }] } })
    const left = await upsert(ahead.url, '?debounce=600', 'left@planned.example')
    expect(left.status).toBe(200)
    await ahead.close()

    const system = await startServer(loadConfig({ ...base, CLOCK: 'system', IMPORT_WORKER: 'inline' }), { role: 'all', out: null })
    try {
      const later = await upsert(system.url, '', 'later@planned.example')
      expect(later.body.import_id).not.toBe(left.body.import_id)
      for (const id of [left.body.import_id, later.body.import_id]) {
        const read = async () => (await call(`${system.url}/v1/imports/${id}`, { key: created.body.api_key })).body.data_import
        expect(await until(read, (data) => data.status === 'finished')).toMatchObject({ error: false })
      }
    } finally {
      await system.close()
    }
  })

  it("is warned by a CLI command when the store's controlled clock was moved: a drain would stamp what it writes behind it", async () => {
    const dir = tempDataDir()
    const demo = await runCliAsync(['demo', '--users', '5', '--months', '1', '--deals', '0', '--json'], { DATA_DIR: dir })
    const companyId = JSON.parse(demo.stdout).company_id as string
    const drain = (env: Record<string, string>) => runCliAsync(['imports', 'drain', '--company', companyId], { DATA_DIR: dir, ...env })
    expect((await drain({})).stderr).not.toContain('CLOCK=system')
    expect((await runCliAsync(['clock', 'advance', '60000'], { DATA_DIR: dir, CLOCK: 'controlled' })).code).toBe(0)
    const warned = await drain({})
    expect(warned.code).toBe(0)
    expect(warned.stderr).toContain("this process runs CLOCK=system, and the store's controlled clock was moved")
    expect((await drain({ CLOCK: 'controlled' })).stderr).not.toContain('CLOCK=system')
    // A command that writes nothing stamps nothing: no warning.
    const backup = await runCliAsync(['backup', join(dir, 'copy.sqlite')], { DATA_DIR: dir })
    expect(backup.code, backup.stderr).toBe(0)
    expect(backup.stderr).not.toContain('CLOCK=system')
    const problems = await runCliAsync(['calculation-problems', '--company', companyId], { DATA_DIR: dir })
    expect(problems.code, problems.stderr).toBe(0)
    expect(problems.stderr).not.toContain('CLOCK=system')
    rmSync(dir, { recursive: true, force: true })
  })
})
