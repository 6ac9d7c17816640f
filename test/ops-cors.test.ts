import { afterEach, describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../src/config.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'

const TOOL = 'http://localhost:5173'

/** The items of a comma-separated header, lower-cased. */
const listOf = (header: unknown) =>
  String(header ?? '')
    .split(',')
    .map((item) => item.trim().toLowerCase())

const preflight = (server: TestServer, path: string, origin: string) =>
  server.call(path, {
    method: 'OPTIONS' as 'GET',
    headers: { origin, 'access-control-request-method': 'PUT', 'access-control-request-headers': 'x-api-key,content-type' },
  })

describe('CORS', () => {
  let server: TestServer

  afterEach(() => server.close())

  it('is off by default: no CORS header, and no preflight answered', async () => {
    server = await startTestServer()
    const { apiKey } = await server.load(smallFixture())
    const reply = await server.call('/v2/data-structures', { key: apiKey, headers: { origin: TOOL } })
    expect(reply.status).toBe(200)
    expect(reply.headers['access-control-allow-origin']).toBeUndefined()
    const refused = await preflight(server, '/v1/users/bulk', TOOL)
    expect(refused.status).toBeGreaterThanOrEqual(400)
    expect(refused.headers['access-control-allow-origin']).toBeUndefined()
    expect(refused.headers['access-control-allow-methods']).toBeUndefined()
  })

  it('with CORS_ORIGINS, answers the preflight of a listed origin, without a key and outside the rate limit', async () => {
    server = await startTestServer({ CORS_ORIGINS: `${TOOL}, https://tool.example`, RATE_LIMIT_PER_SECOND: '2' })
    for (let index = 0; index < 4; index++) {
      const reply = await preflight(server, '/v1/users/bulk', TOOL)
      expect(reply.status).toBe(204)
      expect(reply.headers['access-control-allow-origin']).toBe(TOOL)
      expect(listOf(reply.headers['access-control-allow-methods'])).toEqual(expect.arrayContaining(['get', 'put', 'post', 'delete']))
      expect(listOf(reply.headers['access-control-allow-headers'])).toEqual(expect.arrayContaining(['x-api-key', 'content-type']))
      expect(reply.headers['access-control-max-age']).toBe('600')
      expect(reply.headers.vary).toContain('Origin')
    }
  })

  it('adds the headers to answers for a listed origin, errors included, and exposes the rate-limit and request-id headers', async () => {
    server = await startTestServer({ CORS_ORIGINS: `${TOOL},https://tool.example` })
    const { apiKey } = await server.load(smallFixture())
    const ok = await server.call('/v2/data-structures', { key: apiKey, headers: { origin: 'https://tool.example' } })
    expect(ok.status).toBe(200)
    expect(ok.headers['access-control-allow-origin']).toBe('https://tool.example')
    expect(listOf(ok.headers['access-control-expose-headers'])).toEqual(
      expect.arrayContaining(['x-request-id', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'retry-after']),
    )
    // A browser script can read why it was refused only if the refusal carries the headers too.
    const refused = await server.call('/v2/data-structures', { headers: { origin: TOOL } })
    expect(refused.status).toBe(401)
    expect(refused.body.type).toBe('UnauthorizedError')
    expect(refused.headers['access-control-allow-origin']).toBe(TOOL)
  })

  it('keeps the 404 of an unknown path and the 405 of a wrong method, as without CORS', async () => {
    server = await startTestServer({ CORS_ORIGINS: TOOL })
    const { apiKey } = await server.load(smallFixture())
    const unknown = await server.call('/nonexistent', { key: apiKey })
    expect(unknown.status).toBe(404)
    expect(unknown.body.type).toBe('NotFoundError')
    expect((await server.call('/v1/no-such-resource', { key: apiKey })).status).toBe(404)
    const wrongMethod = await server.call('/v2/data-structures', { method: 'DELETE', key: apiKey })
    expect(wrongMethod.status).toBe(405)
    expect(listOf(wrongMethod.headers.allow)).toEqual(['get', 'head'])
    expect((await preflight(server, '/v2/data-structures', TOOL)).status).toBe(204)
  })

  it('gives an origin that is not listed no CORS header', async () => {
    server = await startTestServer({ CORS_ORIGINS: TOOL })
    const { apiKey } = await server.load(smallFixture())
    const reply = await server.call('/v2/data-structures', { key: apiKey, headers: { origin: 'https://elsewhere.example' } })
    expect(reply.status).toBe(200)
    expect(reply.headers['access-control-allow-origin']).toBeUndefined()
    expect(
      (await preflight(server, '/v2/data-structures', 'https://elsewhere.example')).headers['access-control-allow-origin'],
    ).toBeUndefined()
  })

  it('allows any origin with *', async () => {
    server = await startTestServer({ CORS_ORIGINS: '*' })
    const reply = await server.call('/health/live', { headers: { origin: 'https://anything.example' } })
    expect(reply.headers['access-control-allow-origin']).toBe('*')
  })
})

describe('CORS_ORIGINS', () => {
  it('is a list of origins, normalized; empty by default', () => {
    expect(loadConfig({}).corsOrigins).toEqual([])
    expect(loadConfig({ CORS_ORIGINS: 'HTTP://LocalHost:5173/ , https://tool.example' }).corsOrigins).toEqual([
      'http://localhost:5173',
      'https://tool.example',
    ])
  })

  it('refuses what is not an origin, naming the variable', () => {
    for (const raw of ['localhost:5173', 'https://tool.example/app', 'ftp://tool.example', 'https://tool.example?x=1']) {
      expect(() => loadConfig({ CORS_ORIGINS: raw }), raw).toThrow(ConfigError)
      expect(() => loadConfig({ CORS_ORIGINS: raw }), raw).toThrow(/CORS_ORIGINS=/)
    }
  })
})
