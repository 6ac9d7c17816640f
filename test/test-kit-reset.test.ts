import { rmSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { smallFixture } from './helpers/fixtures.ts'
import { KIT_DEMO_KEY, type KitServer, startKitServer } from './helpers/kit-server.ts'
import { hashApiKey } from '../src/auth/api-keys.ts'
import { runCliAsync, tempDataDir } from './helpers/process.ts'
import { openRunStore, openTestStore } from './helpers/test-store.ts'
import { resetCompany, resetEveryCompany } from '../src/admin/reset.ts'
import { ManualClock } from '../src/clock.ts'
import { NotFoundError } from '../src/errors.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import type { Store } from '../src/store/port.ts'
import { aCompany } from './store/builders.ts'

/** Reset (`POST /admin/companies/{id}/reset`, `POST /admin/reset`, the CLI's `reset`): back to the fixture, same ids and keys. */

let server: KitServer
afterEach(() => server?.close())

/** Everything a client can read of a company, ids included, through v1, v2 and the admin inventory. */
async function everything(key: string, companyId: string) {
  const read = async (path: string) => {
    const answer = await server.call(path, { key })
    expect(answer.status, path).toBe(200)
    return answer.body
  }
  const structures = (await read('/v2/data-structures')).data as { id: string; type: string; links: { fields: string; records: string } }[]
  const rows: Record<string, unknown> = {}
  for (const structure of structures) {
    const path = new URL(structure.links.records).pathname
    rows[structure.id] = { fields: await read(new URL(structure.links.fields).pathname), rows: (await read(`${path}?limit=2000`)).data }
  }
  const tables = (await server.admin(`/admin/companies/${companyId}`)).body.structures.filter(
    (item: { type: string; environment: string }) => item.type === 'data_table' && item.environment === 'live',
  )
  const records: Record<string, unknown> = {}
  for (const table of tables) records[table.key] = (await read(`/v1/tables/${table.key}/records`)).data
  return {
    structures,
    rows,
    records,
    users: (await read('/v1/users')).data,
    reporting: (await read('/v1/reporting?limit=2000')).data,
    inventory: (await server.admin(`/admin/companies/${companyId}`)).body,
    plans: (await server.admin(`/admin/companies/${companyId}/plans`)).body,
  }
}

/** Changes a little of everything a company holds, the way a connector's test would. */
async function change(key: string, companyId: string, table: string, record: Record<string, unknown>) {
  const write = (path: string, method: 'PUT' | 'POST' | 'DELETE', body: unknown) => server.call(path, { key, method, body })
  expect((await write('/v1/users/bulk', 'PUT', { data: [{ email: 'newcomer@reset.example', name: 'Newcomer' }] })).status).toBe(200)
  expect((await write(`/v1/tables/${table}/records/bulk`, 'POST', [record])).status).toBe(200)
  expect(
    (await server.admin(`/admin/companies/${companyId}/imports/drain`, { method: 'POST' })).body.data.every(
      (data: { error: boolean }) => !data.error,
    ),
  ).toBe(true)
  const [statement] = (await server.call('/v1/reporting?limit=1', { key })).body.data
  expect(
    (
      await server.admin(`/admin/companies/${companyId}/statements/${statement.id}`, {
        method: 'PATCH',
        body: { payment: 1, status: 'paid' },
      })
    ).status,
  ).toBe(200)
  const newKey = await server.admin(`/admin/companies/${companyId}/api-keys`, { method: 'POST', body: {} })
  expect(newKey.status).toBe(201)
  return newKey.body.api_key as string
}

describe('reset', () => {
  it('puts the demo company back to its fixture: the same ids, rows and keys, nothing written since', async () => {
    server = await startKitServer()
    const original = await everything(KIT_DEMO_KEY, server.demoId)
    const [deal] = (await server.api('/v1/tables/deals/records?limit=1')).body.data
    const later = await change(KIT_DEMO_KEY, server.demoId, 'deals', { ...deal, amount: 123_456 })
    await server.api('/v1/users/archive/bulk', { method: 'DELETE', body: { data: [{ user: original.users[1].email }] } })
    await server.admin('/admin/clock', { method: 'POST', body: { advance_ms: 30 * 86_400_000 } })
    expect(await everything(KIT_DEMO_KEY, server.demoId)).not.toEqual(original)

    const withBody = await server.admin(`/admin/companies/${server.demoId}/reset`, { method: 'POST', body: { fixture: {} } })
    expect(withBody.status).toBe(400)
    expect(withBody.body.errors).toEqual([expect.objectContaining({ resource: 'fixture' })])
    expect((await server.call('/v1/users?limit=0', { key: later })).status).toBe(200)

    // How long it takes: `npm run bench:reset` (docs/performance.md).
    const reset = await server.admin(`/admin/companies/${server.demoId}/reset`, { method: 'POST' })
    expect(reset.status).toBe(200)
    expect(reset.body).toEqual({ id: server.demoId, name: original.inventory.company.name, reset: true })

    expect(await everything(KIT_DEMO_KEY, server.demoId)).toEqual(original)
    // The key made after the load is gone with everything else written since; the fixture's key still works.
    expect((await server.call('/v1/users?limit=0', { key: later })).status).toBe(401)
    expect((await server.admin(`/admin/companies/${server.demoId}/imports`)).body.count).toBe(0)
    // Rows keep the load's modification times: nothing is newer than the load.
    const statements = original.structures.find((structure) => structure.type === 'statement_reporting')!
    const since = new Date(Date.now() - 60_000).toISOString()
    expect((await server.api(`/v2/reporting/${statements.id}/statements?last_modified_after=${since}`)).body.data).toEqual([])

    // The fixture is kept without the secret its key was given: only the key's hash is stored.
    const origin = await server.running.store.companyOrigins.get(server.demoId)
    expect(origin?.api_keys).toHaveLength(1)
    expect(JSON.stringify(origin)).not.toContain(KIT_DEMO_KEY)

    // Reset twice gives the same company again, also when a client labels its empty body JSON, as some label every call.
    const labelled = await server.admin(`/admin/companies/${server.demoId}/reset`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
    })
    expect(labelled.status).toBe(200)
    expect(await everything(KIT_DEMO_KEY, server.demoId)).toEqual(original)
  })

  it('resets every company at once, and clears every journal and fault', async () => {
    server = await startKitServer()
    const other = await server.admin('/admin/companies', { method: 'POST', body: smallFixture('Other') })
    const { company_id: otherId, api_key: otherKey } = other.body as { company_id: string; api_key: string }
    // A company created before companies kept their fixture: left as it is.
    const older = aCompany({ name: 'Older' })
    await server.running.store.companies.insert(older)
    const originals = [await everything(KIT_DEMO_KEY, server.demoId), await everything(otherKey, otherId)]

    await change(KIT_DEMO_KEY, server.demoId, 'deals', { id: 'D-NEW', name: 'New deal' })
    await change(otherKey, otherId, 'deals', { deal_id: 'D-NEW', deal_name: 'New deal' })
    await server.admin(`/admin/companies/${server.demoId}/faults`, {
      method: 'POST',
      body: { method: 'GET', path: '/v1/users', status: 503 },
    })
    await server.admin(`/admin/companies/${otherId}/faults`, { method: 'POST', body: { method: 'GET', path: '/v1/users', status: 503 } })
    expect((await server.admin(`/admin/companies/${otherId}/requests`)).body.count).toBeGreaterThan(0)

    // A body is refused rather than ignored: a `company` in it does not narrow a reset of everything.
    const scoped = await server.admin('/admin/reset', { method: 'POST', body: { company: otherId } })
    expect(scoped.status).toBe(400)
    expect(scoped.body.errors).toEqual([expect.objectContaining({ resource: 'company' })])
    expect((await server.admin(`/admin/companies/${otherId}/faults`)).body.count).toBe(1)
    // A JSON null is a body, not the absence of one: refused as a body that is not {}.
    for (const body of ['null', '[]', '0']) {
      const notAnObject = await server.admin('/admin/reset', { method: 'POST', body, headers: { 'content-type': 'application/json' } })
      expect(notAnObject.status, body).toBe(400)
      expect(notAnObject.body.errors, body).toEqual([expect.objectContaining({ error: 'ValidationError' })])
    }
    expect((await server.admin(`/admin/companies/${otherId}/faults`)).body.count).toBe(1)

    const reset = await server.admin('/admin/reset', { method: 'POST', body: {} })
    expect(reset.status).toBe(200)
    expect(reset.body.data).toEqual(
      expect.arrayContaining([
        { id: server.demoId, name: expect.any(String), reset: true },
        { id: otherId, name: 'Other', reset: true },
        { id: older.id, name: 'Older', reset: false },
      ]),
    )
    expect((await server.admin(`/admin/companies/${otherId}/faults`)).body.count).toBe(0)
    expect((await server.admin(`/admin/companies/${otherId}/requests`)).body.count).toBe(0)
    expect([await everything(KIT_DEMO_KEY, server.demoId), await everything(otherKey, otherId)]).toEqual(originals)

    const refused = await server.admin(`/admin/companies/${older.id}/reset`, { method: 'POST' })
    expect(refused.status).toBe(400)
    expect(refused.body.errors).toEqual([expect.objectContaining({ error: 'ConflictError', resource: 'company' })])
    expect((await server.admin('/admin/companies/0123456789abcdef01234567/reset', { method: 'POST' })).body).toMatchObject({
      resource: 'company',
      type: 'NotFoundError',
    })
    expect((await server.call('/admin/reset', { method: 'POST' })).status).toBe(401)
  })
})

describe('a reset of every company, one of whose fixtures the rules now refuse', () => {
  it('resets the others, and leaves that one as it is with the problems', async () => {
    server = await startKitServer()
    const loaded = await server.admin('/admin/companies', { method: 'POST', body: smallFixture('Earlier') })
    const earlierId = (loaded.body as { company_id: string }).company_id
    // Its fixture as an earlier version kept it: a list value holding ;, which this version refuses.
    const store = server.running.store
    const origin = (await store.companyOrigins.get(earlierId))!
    const fixture = structuredClone(origin.fixture) as ReturnType<typeof smallFixture>
    fixture.data_tables![0].records![0].deal_types = ['new;upsell']
    await store.companyOrigins.save({ ...origin, fixture })
    await change(KIT_DEMO_KEY, server.demoId, 'deals', { id: 'D-NEW', name: 'New deal' })

    const reset = await server.admin('/admin/reset', { method: 'POST' })
    expect(reset.status).toBe(200)
    expect(reset.body.data).toEqual(
      expect.arrayContaining([
        { id: server.demoId, name: expect.any(String), reset: true },
        {
          id: earlierId,
          name: 'Earlier',
          reset: false,
          problems: [
            {
              error: 'ValidationError',
              resource: '/data_tables/0/records/0/deal_types',
              description: expect.stringContaining('deal_types'),
            },
          ],
        },
      ]),
    )
    // The demo company was reset all the same: the deal written since is gone.
    const deals = await server.api('/v1/tables/deals/records?limit=1000')
    expect(deals.body.data.map((record: { id: string }) => record.id)).not.toContain('D-NEW')
  })
})

describe('reset in the CLI', () => {
  it('puts a company, or every company, back to its fixture', async () => {
    const dataDir = tempDataDir()
    const env = { DATA_DIR: dataDir }
    const demo = JSON.parse((await runCliAsync(['demo', '--users', '5', '--months', '2', '--deals', '10', '--json'], env)).stdout)
    const keys = await runCliAsync(['keys', 'create', '--company', demo.company_id, '--json'], env)
    const later = JSON.parse(keys.stdout).api_key as string

    const one = await runCliAsync(['reset', '--company', demo.company_id, '--json'], env)
    expect(one.code, one.stderr).toBe(0)
    expect(JSON.parse(one.stdout)).toEqual([{ id: demo.company_id, name: expect.any(String), reset: true }])
    const all = await runCliAsync(['reset'], env)
    expect(all.code, all.stderr).toBe(0)
    expect(all.stdout).toContain(`${demo.company_id}`)
    expect(all.stdout).toContain(': reset')

    // The key created after the load is gone; the demo's is kept.
    const store = await openRunStore(dataDir)
    expect(await store.apiKeys.findByHash(hashApiKey(later))).toBeNull()
    expect(await store.apiKeys.findByHash(hashApiKey(demo.api_key))).not.toBeNull()
    await store.close()
    rmSync(dataDir, { recursive: true, force: true })
  })
})

/**
 * `store`, on which another process deletes the company as a reset reads its origin: once it is read, before the reset
 * writes, or just before it is read (the origin goes with the company then).
 */
function deletingAtOriginRead(store: Store, companyId: string, when: 'before' | 'after' = 'after'): Store {
  return {
    ...store,
    companyOrigins: {
      ...store.companyOrigins,
      async get(id) {
        if (id === companyId && when === 'before') await store.companies.delete(companyId)
        const origin = await store.companyOrigins.get(id)
        if (id === companyId && when === 'after') await store.companies.delete(companyId)
        return origin
      },
    },
  }
}

describe('a reset that meets a deletion of its company', () => {
  it('leaves the company deleted, its keys refused, and resets the other companies', async () => {
    const { store, dispose } = await openTestStore()
    try {
      const clock = new ManualClock()
      const gone = await loadFixture(store, clock, smallFixture('Gone'))
      const kept = await loadFixture(store, clock, smallFixture('Kept'))

      await expect(resetCompany(deletingAtOriginRead(store, gone.company_id), gone.company_id)).rejects.toThrow(NotFoundError)
      expect(await store.companies.get(gone.company_id)).toBeNull()
      expect(await store.apiKeys.findByHash(hashApiKey(gone.api_keys[0]))).toBeNull()
      expect(await store.companyOrigins.get(gone.company_id)).toBeNull()

      const again = await loadFixture(store, clock, smallFixture('Gone'))
      const outcomes = await resetEveryCompany(deletingAtOriginRead(store, again.company_id))
      expect(outcomes).toEqual([{ id: kept.company_id, name: 'Kept', reset: true }])
      expect(await store.companies.get(again.company_id)).toBeNull()
      expect(await store.apiKeys.findByHash(hashApiKey(again.api_keys[0]))).toBeNull()
    } finally {
      await dispose()
    }
  })

  it('is a 404 for a company deleted before its fixture was read, not one created before fixtures were kept', async () => {
    const { store, dispose } = await openTestStore()
    try {
      const clock = new ManualClock()
      const gone = await loadFixture(store, clock, smallFixture('Gone'))
      const kept = await loadFixture(store, clock, smallFixture('Kept'))

      await expect(resetCompany(deletingAtOriginRead(store, gone.company_id, 'before'), gone.company_id)).rejects.toThrow(NotFoundError)

      const again = await loadFixture(store, clock, smallFixture('Gone'))
      const outcomes = await resetEveryCompany(deletingAtOriginRead(store, again.company_id, 'before'))
      expect(outcomes).toEqual([{ id: kept.company_id, name: 'Kept', reset: true }])
    } finally {
      await dispose()
    }
  })
})
