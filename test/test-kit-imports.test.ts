import { rmSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { drainImports } from '../src/admin/imports.ts'
import { composeImportWorker } from '../src/imports/compose-worker.ts'
import { systemClock } from '../src/clock.ts'
import { enqueueImport } from '../src/imports/enqueue.ts'
import { KIT_DEMO_KEY, type KitServer, startKitServer, until } from './helpers/kit-server.ts'
import { runCliAsync, tempDataDir } from './helpers/process.ts'
import { pausingBeforePayloads } from './helpers/store-wrappers.ts'
import { openRunStore } from './helpers/test-store.ts'
import { gate } from './store/contract/support.ts'

/** Waiting for imports (`POST /admin/companies/{id}/imports/drain`) and listing them, over HTTP and in the CLI. */

let server: KitServer
afterEach(() => server?.close())

const upsertUsers = (emails: string[], debounce = 300) =>
  server.api(`/v1/users/bulk?debounce=${debounce}`, { method: 'PUT', body: { data: emails.map((email) => ({ email })) } })

/**
 * A kit server with one upsert of `email` waiting, and a drain's worker whose runs are held after their claim until
 * `held` opens, as a long parse or a large import's steps hold them.
 */
async function heldDrain(email: string) {
  server = await startKitServer({ IMPORT_POLL_MS: '60000' })
  const upsert = await upsertUsers([email], 0)
  const held = gate()
  const { clock, config } = server.running.app
  const store = pausingBeforePayloads(server.running.store, () => held.promise)
  return { upsert, held, store, clock, worker: composeImportWorker({ store, clock, config }) }
}

describe('draining imports', () => {
  it('closes every open window, runs every pending import, and answers with them finished', async () => {
    // A long poll: the drain itself runs the imports, it does not wait for the worker to come by.
    server = await startKitServer({ IMPORT_POLL_MS: '60000' })
    const users = await upsertUsers(['one@demo.example'])
    const joined = await upsertUsers(['two@demo.example'])
    const records = await server.api('/v1/tables/deals/records/bulk?debounce=600', {
      method: 'POST',
      body: [{ id: 'D-DRAIN', name: 'Drained' }],
    })
    const managers = await server.api('/v1/users/managers/bulk', {
      method: 'PUT',
      body: { data: [{ user: 'one@demo.example', manager: 'nobody@demo.example' }] },
    })
    expect(joined.body.import_id).toBe(users.body.import_id)

    const before = await server.admin(`/admin/companies/${server.demoId}/imports?status=scheduled`)
    expect(before.body.count).toBe(3)
    expect(before.body.data.map((data: { id: string }) => data.id)).toEqual([
      managers.body.import_id,
      records.body.import_id,
      users.body.import_id,
    ])

    const drained = await server.admin(`/admin/companies/${server.demoId}/imports/drain`, { method: 'POST' })
    expect(drained.status).toBe(200)
    expect(drained.body.count).toBe(3)
    // Oldest first, each as GET /v1/imports shows it, with its target, window and claims.
    expect(drained.body.data.map((data: { id: string; target: string }) => [data.id, data.target])).toEqual([
      [users.body.import_id, 'users'],
      [records.body.import_id, 'records'],
      [managers.body.import_id, 'managers'],
    ])
    for (const data of drained.body.data) expect(data).toMatchObject({ status: 'finished', progress: 100, attempts: 1 })
    expect(drained.body.data[0].data_tables_details.map((detail: { number_of_records: number }) => detail.number_of_records)).toEqual([
      1, 1,
    ])
    // The managers call named an unknown user: its import finished with the refusal, which the drain shows.
    expect(drained.body.data[2]).toMatchObject({ error: true, data_tables_details: [{ error: { title: 'ValidationError' } }] })
    // The windows were closed at the drain's time, long before they would have ended.
    expect(Date.parse(drained.body.data[1].window_ends_at)).toBeLessThan(Date.parse(drained.body.data[1].created_at) + 600_000)

    expect((await server.admin(`/admin/companies/${server.demoId}/imports?status=scheduled`)).body.count).toBe(0)
    const all = await server.admin(`/admin/companies/${server.demoId}/imports?limit=2`)
    expect(all.body.data.map((data: { id: string }) => data.id)).toEqual([managers.body.import_id, records.body.import_id])
    expect((await server.api('/v1/tables/deals/records')).body.data.map((record: { id: string }) => record.id)).toContain('D-DRAIN')
    // Nothing left: the next drain answers at once, with nothing.
    expect((await server.admin(`/admin/companies/${server.demoId}/imports/drain`, { method: 'POST' })).body).toEqual({ count: 0, data: [] })
  })

  it('waits for an import another worker runs, and answers 408 past its timeout', async () => {
    server = await startKitServer({ IMPORT_POLL_MS: '60000' })
    const upsert = await upsertUsers(['held@demo.example'], 0)
    const { store } = server.running
    const now = new Date(Date.parse((await server.admin('/admin/clock')).body.now))
    // Another worker holds the import under a live lease (it runs, or it died a moment ago).
    expect(
      await store.imports.claimNext('other-worker', now.toISOString(), new Date(now.getTime() + 3_600_000).toISOString(), server.demoId),
    ).not.toBeNull()

    const timedOut = await server.admin(`/admin/companies/${server.demoId}/imports/drain?timeout_ms=200`, { method: 'POST' })
    expect(timedOut.status).toBe(408)
    expect(timedOut.body).toEqual({
      count: 1,
      errors: [
        { error: 'ValidationError', resource: 'timeout_ms', description: expect.stringContaining(`${upsert.body.import_id} (started)`) },
      ],
    })

    // The other worker finishes it while the drain waits: the drain answers with it.
    const draining = server.admin(`/admin/companies/${server.demoId}/imports/drain?timeout_ms=10000`, { method: 'POST' })
    await new Promise((resolve) => setTimeout(resolve, 100))
    await store.imports.finish(server.demoId, upsert.body.import_id, 'other-worker', {
      finished_at: now.toISOString(),
      error: false,
      details: [],
    })
    const drained = await draining
    expect(drained.status).toBe(200)
    expect(drained.body.data.map((data: { id: string; status: string }) => [data.id, data.status])).toEqual([
      [upsert.body.import_id, 'finished'],
    ])
  })

  it('does not answer while an import another worker hands back between its reads is scheduled again', async () => {
    server = await startKitServer({ IMPORT_POLL_MS: '60000' })
    const upsert = await upsertUsers(['handed@demo.example'], 0)
    const { store, app } = server.running
    const now = (await server.admin('/admin/clock')).body.now as string
    expect(
      await store.imports.claimNext('other-worker', now, new Date(Date.parse(now) + 3_600_000).toISOString(), server.demoId),
    ).not.toBeNull()
    // The other worker hands the import back (it stops, or found the store busy) just after the drain looked for
    // scheduled imports, before it looks for running ones.
    let handedBack = false
    const watched: typeof store = {
      ...store,
      imports: {
        ...store.imports,
        async list(companyId, filter) {
          const listed = await store.imports.list(companyId, filter)
          if (!handedBack && [filter.status].flat().includes('scheduled')) {
            handedBack = true
            await store.imports.release(companyId, upsert.body.import_id, 'other-worker')
          }
          return listed
        },
      },
    }
    const worker = composeImportWorker({ store, clock: app.clock, config: app.config })

    const drained = await drainImports(watched, app.clock, worker, server.demoId, 10_000)
    expect(handedBack).toBe(true)
    expect(drained.data.map((data) => [data.id, data.status])).toEqual([[upsert.body.import_id, 'finished']])
    expect(await store.imports.get(server.demoId, upsert.body.import_id)).toMatchObject({ status: 'finished' })
  })

  it('answers 408 at its deadline while it runs an import itself, the run going on to finish the import', async () => {
    const { upsert, held, store, clock, worker } = await heldDrain('slow@demo.example')
    await expect(drainImports(store, clock, worker, server.demoId, 50)).rejects.toMatchObject({
      name: 'TimedOutError',
      issues: [{ resource: 'timeout_ms', description: expect.stringContaining(`${upsert.body.import_id} (started)`) }],
    })
    // The run was neither stopped nor handed back: it goes on, and the worker is idle only once it has ended.
    let idle = false
    const idled = worker.idle().then(() => {
      idle = true
    })
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(idle).toBe(false)
    held.open()
    await idled
    expect(await server.running.store.imports.get(server.demoId, upsert.body.import_id)).toMatchObject({ status: 'finished', attempts: 1 })
  })

  it('answers 404 rather than an empty list when its company is deleted while it runs', async () => {
    const { upsert, held, store, clock, worker } = await heldDrain('doomed@demo.example')
    const draining = drainImports(store, clock, worker, server.demoId, 10_000)
    await until(
      () => server.running.store.imports.get(server.demoId, upsert.body.import_id),
      (found) => found?.status === 'started',
    )
    expect((await server.admin(`/admin/companies/${server.demoId}`, { method: 'DELETE' })).status).toBe(204)
    held.open()
    await expect(draining).rejects.toMatchObject({ name: 'NotFoundError', resource: 'company' })
    await worker.idle()
  })

  it("hands a drain's run back when its worker stops (the app closing after a 408), rather than leave it to the lease", async () => {
    const { upsert, held, worker } = await heldDrain('stopped@demo.example')
    const run = worker.runOnce(server.demoId)
    await until(
      () => server.running.store.imports.get(server.demoId, upsert.body.import_id),
      (found) => found?.status === 'started',
    )
    const stopping = worker.stop()
    held.open()
    await stopping
    // Stopped before its first transaction: handed back, and claimed again at once by any worker.
    expect(await server.running.store.imports.get(server.demoId, upsert.body.import_id)).toMatchObject({ status: 'scheduled', attempts: 1 })
    expect(await run).toBe(true)
  })

  it('refuses what it cannot do with the documented bodies', async () => {
    server = await startKitServer()
    const unknown = '0123456789abcdef01234567'
    expect((await server.admin(`/admin/companies/${unknown}/imports/drain`, { method: 'POST' })).body).toMatchObject({
      resource: 'company',
      type: 'NotFoundError',
    })
    expect((await server.admin(`/admin/companies/${unknown}/imports`)).status).toBe(404)
    const badStatus = await server.admin(`/admin/companies/${server.demoId}/imports?status=done`)
    expect(badStatus.status).toBe(400)
    expect(badStatus.body.errors[0].resource).toBe('status')
    expect(
      (await server.admin(`/admin/companies/${server.demoId}/imports/drain?timeout_ms=-5`, { method: 'POST' })).body.errors[0].resource,
    ).toBe('timeout_ms')
    // The bound goes in the query: sent in a body, it is refused rather than ignored.
    const inBody = await server.admin(`/admin/companies/${server.demoId}/imports/drain`, { method: 'POST', body: { timeout_ms: 5 } })
    expect(inBody.status).toBe(400)
    expect(inBody.body.errors[0].resource).toBe('timeout_ms')
    expect((await server.admin(`/admin/companies/${server.demoId}/imports/drain`, { method: 'POST', body: {} })).status).toBe(200)
    expect((await server.call(`/admin/companies/${server.demoId}/imports/drain`, { method: 'POST' })).status).toBe(401)
  })
})

describe('draining imports in the CLI', () => {
  it('lists the imports, and drains them by running them itself, with no server on the store', async () => {
    const dataDir = tempDataDir()
    const env = { DATA_DIR: dataDir, DEMO_API_KEY: KIT_DEMO_KEY }
    const demo = await runCliAsync(['demo', '--users', '5', '--months', '2', '--deals', '5', '--json'], env)
    expect(demo.code, demo.stderr).toBe(0)
    const companyId = JSON.parse(demo.stdout).company_id as string
    // Scheduled imports written into the store, as an API instance receives them, with a window still open.
    const store = await openRunStore(dataDir)
    const company = (await store.companies.get(companyId))!
    const receipt = await enqueueImport(store, systemClock, {
      company,
      target: 'users',
      items: [{ email: 'cli@demo.example' }],
      bytes: 40,
      queueLimitBytes: 1 << 20,
      debounceSeconds: 3600,
    })
    await store.close()

    const listed = await runCliAsync(['imports', '--company', companyId, '--status', 'scheduled', '--json'], env)
    expect(listed.code, listed.stderr).toBe(0)
    expect(JSON.parse(listed.stdout)).toMatchObject({ count: 1, data: [{ id: receipt.import_id, status: 'scheduled', target: 'users' }] })

    const drained = await runCliAsync(['imports', 'drain', '--company', companyId, '--json'], env)
    expect(drained.code, drained.stderr).toBe(0)
    expect(JSON.parse(drained.stdout)).toMatchObject({ count: 1, data: [{ id: receipt.import_id, status: 'finished', error: false }] })
    const text = await runCliAsync(['imports', '--company', companyId], env)
    expect(text.stdout).toMatch(new RegExp(`${receipt.import_id}\\s+users\\s+finished\\s+ok`))
    expect((await runCliAsync(['imports', '--company', companyId, '--status', 'done'], env)).code).toBe(2)
    rmSync(dataDir, { recursive: true, force: true })
  })
})
