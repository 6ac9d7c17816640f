import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { smallFixture } from './helpers/fixtures.ts'
import { call, startTestServer, type TestServer } from './helpers/server.ts'
import { openRunStore } from './helpers/test-store.ts'
import { temporaryDirectory } from './helpers/temporary-directories.ts'
import { badParameter, notFound } from './v2-support.ts'
import { buildApp } from '../src/app.ts'
import { ManualClock } from '../src/clock.ts'
import { loadConfig } from '../src/config.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'

const TOKEN = 'admin-token-for-the-revocation-tests'
const admin = { authorization: `Bearer ${TOKEN}` }
const ENV = { ADMIN_TOKEN: TOKEN, RATE_LIMIT_PER_SECOND: '1000000' }

/** The read of each version a key is tried on. */
const READS = ['/v1/users?limit=1', '/v2/data-structures']

const keyPath = (companyId: string, keyId: string) => `/admin/companies/${companyId}/api-keys/${keyId}`

describe('revoking an API key (DELETE /admin/companies/{id}/api-keys/{key_id})', () => {
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer(ENV)
  })
  afterAll(() => server.close())

  /** A company with its two fixture keys (owner, rep), one more made through the admin route, and their ids. */
  async function company(name: string) {
    const loaded = await loadFixture(server.store, server.clock, smallFixture(name))
    const companyId = loaded.company_id
    const created = await server.call(`/admin/companies/${companyId}/api-keys`, { method: 'POST', headers: admin })
    expect(created.status).toBe(201)
    const inventory = await server.call(`/admin/companies/${companyId}`, { headers: admin })
    const secrets = [...loaded.api_keys, created.body.api_key as string]
    // Each secret's id, found by its display prefix: the inventory shows no secret.
    const listed: Array<{ id: string; prefix: string }> = inventory.body.api_keys
    const ids = secrets.map((secret) => listed.find((key) => secret.startsWith(key.prefix))!.id)
    expect(new Set(ids).size).toBe(3)
    return { companyId, secrets, ids }
  }

  /** The statuses `key` is answered on each version's read. */
  const statuses = async (key: string) => Promise.all(READS.map(async (path) => (await server.call(path, { key })).status))

  it('refuses the key at the next request, as an unknown key, and leaves the company’s other keys working', async () => {
    const { companyId, secrets, ids } = await company('Revoked')
    const [revoked, revokedId] = [secrets[2], ids[2]]
    expect(await statuses(revoked)).toEqual([200, 200])
    const reply = await server.call(keyPath(companyId, revokedId), { method: 'DELETE', headers: admin })
    expect(reply.status).toBe(204)
    expect(reply.text).toBe('')
    for (const path of READS) {
      const refused = await server.call(path, { key: revoked })
      const unknown = await server.call(path, { key: 'cak_no-such-key-was-ever-made-here' })
      expect(refused.status, path).toBe(401)
      expect(refused.body, path).toEqual(unknown.body)
      expect(refused.body, path).toEqual({ message: 'Invalid API key', type: 'UnauthorizedError' })
    }
    expect(await statuses(secrets[0])).toEqual([200, 200])
    expect(await statuses(secrets[1])).toEqual([200, 200])
    const inventory = await server.call(`/admin/companies/${companyId}`, { headers: admin })
    expect(inventory.body.api_keys.map((key: { id: string }) => key.id).toSorted()).toEqual(ids.slice(0, 2).toSorted())
    // Never logged: neither the secret nor its hash is what the log names a request by.
    expect(server.rawLogs()).not.toContain(revoked)
  })

  it('answers 404 for a key revoked already, another company’s key, and an unknown company', async () => {
    const mine = await company('Mine')
    const theirs = await company('Theirs')
    expect((await server.call(keyPath(mine.companyId, mine.ids[0]), { method: 'DELETE', headers: admin })).status).toBe(204)
    const again = await server.call(keyPath(mine.companyId, mine.ids[0].toUpperCase()), { method: 'DELETE', headers: admin })
    expect(again.status).toBe(404)
    expect(again.body).toEqual(notFound('api_key'))
    const crossed = await server.call(keyPath(mine.companyId, theirs.ids[0]), { method: 'DELETE', headers: admin })
    expect(crossed.status).toBe(404)
    expect(crossed.body).toEqual(notFound('api_key'))
    expect(await statuses(theirs.secrets[0])).toEqual([200, 200])
    const unknownCompany = await server.call(keyPath('0123456789abcdef01234567', theirs.ids[0]), { method: 'DELETE', headers: admin })
    expect(unknownCompany.status).toBe(404)
    expect(unknownCompany.body).toEqual(notFound('company'))
    expect(await statuses(theirs.secrets[0])).toEqual([200, 200])
  })

  it('answers 400 naming the parameter for a malformed id, or a body field, and revokes nothing', async () => {
    const { companyId, secrets, ids } = await company('Careful')
    const malformed = await server.call(keyPath(companyId, 'not-an-id'), { method: 'DELETE', headers: admin })
    expect(malformed.status).toBe(400)
    expect(malformed.body).toEqual(badParameter('key_id'))
    const withBody = await server.call(keyPath(companyId, ids[0]), {
      method: 'DELETE',
      headers: admin,
      body: { user: 'owner@careful.example' },
    })
    expect(withBody.status).toBe(400)
    expect(withBody.body.errors).toEqual([expect.objectContaining({ resource: 'user' })])
    const withoutToken = await server.call(keyPath(companyId, ids[0]), { method: 'DELETE' })
    expect(withoutToken.status).toBe(401)
    expect(await statuses(secrets[0])).toEqual([200, 200])
  })

  it('brings a fixture’s revoked key back with a reset of its company, as every key of the fixture', async () => {
    const { companyId, secrets, ids } = await company('Resettable')
    expect((await server.call(keyPath(companyId, ids[0]), { method: 'DELETE', headers: admin })).status).toBe(204)
    expect(await statuses(secrets[0])).toEqual([401, 401])
    expect((await server.call(`/admin/companies/${companyId}/reset`, { method: 'POST', headers: admin })).status).toBe(200)
    expect(await statuses(secrets[0])).toEqual([200, 200])
    // The key made after the load is not the fixture's: the reset drops it.
    expect(await statuses(secrets[2])).toEqual([401, 401])
  })
})

describe('a key revoked through one instance, on another sharing the store', () => {
  it('is refused by the other within its principal cache’s half second', async () => {
    const dataDir = temporaryDirectory('key-revocation-')
    const config = loadConfig({ DEMO: 'off', LOG_LEVEL: 'silent', ...ENV })
    const [here, there] = [await openRunStore(dataDir), await openRunStore(dataDir)]
    const clock = new ManualClock('2026-06-01T00:00:00.000Z')
    const apps = [await buildApp({ config, store: here, clock }), await buildApp({ config, store: there, clock })]
    try {
      const [url, otherUrl] = await Promise.all(apps.map((app) => app.listen({ host: '127.0.0.1', port: 0 })))
      const loaded = await loadFixture(here, clock, smallFixture('Shared'))
      const [{ id }] = await here.apiKeys.list(loaded.company_id)
      const key = loaded.api_keys[0]
      // The other instance has just authenticated the key: its cache holds it.
      expect((await call(`${otherUrl}/v2/data-structures`, { key })).status).toBe(200)
      const revoked = await call(url + keyPath(loaded.company_id, id), { method: 'DELETE', headers: admin })
      expect(revoked.status).toBe(204)
      expect((await call(`${url}/v2/data-structures`, { key })).status).toBe(401)
      let status = 200
      while (status === 200) {
        await sleep(20)
        status = (await call(`${otherUrl}/v2/data-structures`, { key })).status
      }
      expect(status).toBe(401)
      expect((await call(`${otherUrl}/v2/data-structures`, { key: loaded.api_keys[1] })).status).toBe(200)
    } finally {
      await Promise.all(apps.map((app) => app.close()))
      await Promise.all([here.close(), there.close()])
    }
  })
})
