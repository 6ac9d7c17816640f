import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { smallFixture } from './helpers/fixtures.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'

describe('authentication and error bodies over HTTP', () => {
  let server: TestServer
  let key: string
  let companyId: string

  beforeAll(async () => {
    server = await startTestServer()
    ;({ apiKey: key, companyId } = await server.load(smallFixture()))
  })
  afterAll(() => server.close())

  it('answers a valid key', async () => {
    const reply = await server.call('/v2/data-structures', { key })
    expect(reply.status).toBe(200)
  })

  it('401 without a key, with the UnauthorizedError body', async () => {
    const reply = await server.call('/v2/data-structures')
    expect(reply.status).toBe(401)
    expect(reply.body).toEqual({ message: expect.any(String), type: 'UnauthorizedError' })
  })

  it('401 for an unknown key', async () => {
    const reply = await server.call('/v2/data-structures', { key: 'cak_not-a-real-key-at-all' })
    expect(reply.status).toBe(401)
    expect(reply.body).toEqual({ message: expect.any(String), type: 'UnauthorizedError' })
  })

  it('never authenticates a key sent in the query string', async () => {
    for (const name of ['api_key', 'X-API-Key', 'x-api-key', 'apiKey', 'key']) {
      const reply = await server.call(`/v2/data-structures?${name}=${encodeURIComponent(key)}`)
      expect(reply.status, name).toBe(401)
    }
  })

  it('stores only the hash of a key', async () => {
    const keys = await server.store.apiKeys.list(companyId)
    expect(keys).toHaveLength(2)
    for (const stored of keys) expect(JSON.stringify(stored)).not.toContain(key)
  })

  it('403 with the ForbiddenError body when the company has not enabled the public API', async () => {
    const fixture = smallFixture('Closed')
    fixture.company.public_api_enabled = false
    const closed = await server.load(fixture)
    const reply = await server.call('/v2/data-structures', { key: closed.apiKey })
    expect(reply.status).toBe(403)
    expect(reply.body).toEqual({ message: expect.any(String), type: 'ForbiddenError', error: 'ForbiddenError' })
  })

  it('a key whose owner is archived no longer authenticates', async () => {
    const fixture = { ...smallFixture('Leaver'), api_keys: [{ user: 'rep@leaver.example', secret: 'cak_known-secret-of-the-rep' }] }
    const leaver = await server.load(fixture)
    const apiKey = leaver.apiKey
    expect((await server.call('/v2/data-structures', { key: apiKey })).status).toBe(200)
    const rep = (await server.store.users.findByEmails(leaver.companyId, ['rep@leaver.example'])).get('rep@leaver.example')!
    await server.store.users.save(leaver.companyId, [{ ...rep, status: 'archived' }])
    const reply = await server.call('/v2/data-structures', { key: apiKey })
    expect(reply.status).toBe(401)
    expect(reply.body).toEqual({ message: expect.any(String), type: 'UnauthorizedError' })
  })

  it('tells caches to keep no answer read with a key or the admin token, refusals included, and only those', async () => {
    const adminToken = 'a-long-enough-admin-token'
    const withAdmin = await startTestServer({ ADMIN_TOKEN: adminToken })
    try {
      const { apiKey } = await withAdmin.load(smallFixture())
      const authorization = `Bearer ${adminToken}`
      const answers = [
        await withAdmin.call('/v2/data-structures', { key: apiKey }),
        await withAdmin.call('/v1/users?limit=1', { key: apiKey }),
        await withAdmin.call('/v2/data-structures'),
        await withAdmin.call('/v2/no-such-route', { key: apiKey }),
        await withAdmin.call('/admin/companies', { headers: { authorization } }),
        await withAdmin.call('/admin/companies'),
      ]
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 401, 404, 200, 401])
      for (const answer of answers) expect(answer.headers['cache-control']).toBe('no-store')
      const probe = await withAdmin.call('/health/live')
      expect(probe.headers['cache-control']).toBeUndefined()
    } finally {
      await withAdmin.close()
    }
  })

  it('404 with the NotFoundError body for an unknown route', async () => {
    const reply = await server.call('/v2/no-such-thing', { key })
    expect(reply.status).toBe(404)
    expect(reply.body).toEqual({ message: expect.any(String), resource: 'route', type: 'NotFoundError' })
  })

  it('echoes an incoming X-Request-Id and logs it', async () => {
    const reply = await server.call('/v2/data-structures', { key, headers: { 'x-request-id': 'trace-abc-123' } })
    expect(reply.headers['x-request-id']).toBe('trace-abc-123')
    const line = server.logs.find((entry) => entry.request_id === 'trace-abc-123')
    expect(line).toMatchObject({ msg: 'request', res: { statusCode: 200 } })
  })

  it('does not take an X-Request-Id that carries an API key: it makes one, so that the key is neither logged nor echoed', async () => {
    for (const incoming of [key, 'cak_another-key-of-the-service', `trace-${key}`]) {
      const reply = await server.call('/v2/data-structures', { key, headers: { 'x-request-id': incoming } })
      expect(reply.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
      expect(server.logs.filter((entry) => entry.request_id === reply.headers['x-request-id'])).toHaveLength(1)
    }
    expect(server.rawLogs()).not.toContain(key)
    expect(server.rawLogs()).not.toContain('cak_another-key')
  })

  it('neither logs nor echoes nor takes as a request id the admin token, wherever a client put it', async () => {
    const adminToken = 'the-admin-token-of-this-server'
    const withAdmin = await startTestServer({ ADMIN_TOKEN: adminToken })
    try {
      const { apiKey } = await withAdmin.load(smallFixture())
      const asId = await withAdmin.call('/v1/users?limit=1', { key: apiKey, headers: { 'x-request-id': adminToken } })
      expect(asId.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
      await withAdmin.call(`/v1/imports/${adminToken}`, { key: apiKey })
      await withAdmin.call(`/v1/imports/${adminToken.replace('a', '%61')}`, { key: apiKey })
      await withAdmin.call(`/admin/clock?${adminToken}=1`, { headers: { authorization: `Bearer ${adminToken}` } })
      expect(withAdmin.rawLogs()).not.toContain(adminToken)
      expect(withAdmin.rawLogs()).not.toContain(adminToken.replace('a', '%61'))
      expect(
        withAdmin.logs.filter((entry) => String((entry.req as { url?: string } | undefined)?.url).includes('[Redacted]')),
      ).not.toHaveLength(0)
    } finally {
      await withAdmin.close()
    }
  })

  it('makes a request id when none is sent, one log line per request', async () => {
    const reply = await server.call('/v2/data-structures', { key })
    const id = reply.headers['x-request-id']
    expect(id).toMatch(/^[0-9a-f-]{36}$/)
    expect(server.logs.filter((entry) => entry.request_id === id)).toHaveLength(1)
  })

  it('never writes a key or a bearer token to the logs', async () => {
    await server.call('/v2/data-structures', { key, headers: { authorization: 'Bearer super-secret-token-value' } })
    await server.call(`/v2/data-structures?api_key=${key}`)
    expect(server.rawLogs()).not.toContain(key)
    expect(server.rawLogs()).not.toContain('super-secret-token-value')
  })
})
