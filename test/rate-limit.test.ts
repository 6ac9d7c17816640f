import { DatabaseSync } from 'node:sqlite'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { smallFixture } from './helpers/fixtures.ts'
import { startKitServer } from './helpers/kit-server.ts'
import { tempDataDir } from './helpers/process.ts'
import { type Reply, startTestServer, type TestServer } from './helpers/server.ts'

const statuses = (replies: Reply[]) => replies.map((reply) => reply.status)

describe('rate limit: 80 requests per second per company', () => {
  let server: TestServer

  afterEach(() => server.close())

  it('lets 80 requests of one second through, with RateLimit-* headers, and answers the 81st with 429', async () => {
    server = await startTestServer()
    const { apiKey } = await server.load(smallFixture())
    const passed: Reply[] = []
    for (let index = 0; index < 80; index++) passed.push(await server.call('/v2/data-structures', { key: apiKey }))
    expect(statuses(passed)).toEqual(Array(80).fill(200))
    expect(passed.map((reply) => reply.headers['ratelimit-remaining'])).toEqual(
      Array.from({ length: 80 }, (_, index) => String(79 - index)),
    )
    expect(passed[0].headers['ratelimit-limit']).toBe('80')
    expect(passed[0].headers['ratelimit-reset']).toBe('1')

    const refused = await server.call('/v2/data-structures', { key: apiKey, headers: { 'x-request-id': 'over-the-limit' } })
    expect(refused.status).toBe(429)
    expect(refused.body).toEqual({ message: expect.any(String), type: 'TooManyRequestsError' })
    expect(refused.headers).toMatchObject({
      'retry-after': '1',
      'ratelimit-limit': '80',
      'ratelimit-remaining': '0',
      'ratelimit-reset': '1',
      'x-request-id': 'over-the-limit',
    })
    expect(server.logs.find((line) => line.request_id === 'over-the-limit')).toMatchObject({ res: { statusCode: 429 } })
  })

  it('counts concurrent requests exactly: of 90 sent at once, 80 pass', async () => {
    server = await startTestServer()
    const { apiKey } = await server.load(smallFixture())
    const replies = await Promise.all(Array.from({ length: 90 }, () => server.call('/v2/data-structures', { key: apiKey })))
    expect(replies.filter((reply) => reply.status === 200)).toHaveLength(80)
    expect(replies.filter((reply) => reply.status === 429)).toHaveLength(10)
  })

  it('frees the window after one second', async () => {
    server = await startTestServer()
    const { apiKey } = await server.load(smallFixture())
    for (let index = 0; index < 80; index++) await server.call('/v2/data-structures', { key: apiKey })
    server.clock.advance(999)
    expect((await server.call('/v2/data-structures', { key: apiKey })).status).toBe(429)
    server.clock.advance(1)
    const freed = await server.call('/v2/data-structures', { key: apiKey })
    expect(freed.status).toBe(200)
    expect(freed.headers['ratelimit-remaining']).toBe('79')
  })

  it('keeps companies apart: one over its limit does not slow another', async () => {
    server = await startTestServer()
    const busy = await server.load(smallFixture('Busy'))
    const calm = await server.load(smallFixture('Calm'))
    for (let index = 0; index < 81; index++) await server.call('/v2/data-structures', { key: busy.apiKey })
    expect((await server.call('/v2/data-structures', { key: busy.apiKey })).status).toBe(429)
    const other = await server.call('/v2/data-structures', { key: calm.apiKey })
    expect(other.status).toBe(200)
    expect(other.headers['ratelimit-remaining']).toBe('79')
  })

  it('counts every key of a company against one budget', async () => {
    server = await startTestServer()
    const fixture = smallFixture()
    fixture.api_keys = [
      { user: 'owner@acme.example', secret: 'cak_owner-key-of-the-rate-test' },
      { user: 'rep@acme.example', secret: 'cak_rep-key-of-the-rate-test' },
    ]
    await server.load(fixture)
    for (let index = 0; index < 40; index++) {
      await server.call('/v2/data-structures', { key: 'cak_owner-key-of-the-rate-test' })
      await server.call('/v2/data-structures', { key: 'cak_rep-key-of-the-rate-test' })
    }
    expect((await server.call('/v2/data-structures', { key: 'cak_rep-key-of-the-rate-test' })).status).toBe(429)
  })

  it('limits requests without a valid key per client address, so that guessing keys is slow', async () => {
    server = await startTestServer()
    await server.load(smallFixture())
    const guesses: Reply[] = []
    for (let index = 0; index < 80; index++) guesses.push(await server.call('/v2/data-structures', { key: `cak_guess-${index}` }))
    expect(statuses(guesses)).toEqual(Array(80).fill(401))
    expect(guesses[79].headers['ratelimit-remaining']).toBe('0')
    const over = await server.call('/v2/data-structures', { key: 'cak_guess-80' })
    expect(over.status).toBe(429)
    expect(over.body.type).toBe('TooManyRequestsError')
    expect((await server.call('/v2/data-structures')).status).toBe(429)
    server.clock.advance(1000)
    expect((await server.call('/v2/data-structures', { key: 'cak_guess-81' })).status).toBe(401)
  })

  it('never refuses a valid key because other clients at the same address sent bad keys', async () => {
    server = await startTestServer()
    const first = await server.load(smallFixture('First'))
    const second = await server.load(smallFixture('Second'))
    // Bad keys spend the address's budget, and more: they are refused with 429 from the 81st on.
    const bad: Reply[] = []
    for (let index = 0; index < 100; index++) bad.push(await server.call('/v2/data-structures', { key: `cak_bad-${index}` }))
    expect(statuses(bad).filter((status) => status === 429)).toHaveLength(20)
    // Within the same window, each valid key is counted against its company only.
    for (const company of [first, second]) {
      const replies: Reply[] = []
      for (let index = 0; index < 80; index++) replies.push(await server.call('/v2/data-structures', { key: company.apiKey }))
      expect(statuses(replies)).toEqual(Array(80).fill(200))
      expect(replies[0].headers['ratelimit-remaining']).toBe('79')
    }
    expect((await server.call('/v2/data-structures', { key: 'cak_bad-100' })).status).toBe(429)
  })

  it('does not count a company against its address: a busy company leaves other companies on the same address alone', async () => {
    server = await startTestServer()
    const busy = await server.load(smallFixture('Busy'))
    for (let index = 0; index < 81; index++) await server.call('/v2/data-structures', { key: busy.apiKey })
    expect((await server.call('/v2/data-structures', { key: 'cak_not-a-key' })).status).toBe(401)
  })

  it('leaves health, metrics and the documentation outside the limit, and asks them for no key', async () => {
    server = await startTestServer()
    for (let index = 0; index < 81; index++) await server.call('/v2/data-structures')
    expect((await server.call('/v2/data-structures')).status).toBe(429)
    for (const path of ['/health/live', '/health/ready', '/metrics', '/openapi.json']) {
      const reply = await server.call(path)
      expect(reply.status, path).toBe(200)
      expect(reply.headers['ratelimit-limit'], path).toBeUndefined()
    }
  })

  it('counts a v1 or v2 path no route takes, and a wrong method, as every other request of the company', async () => {
    server = await startTestServer({ RATE_LIMIT_PER_SECOND: '3' })
    const { apiKey } = await server.load(smallFixture())
    // Without a key: refused as any v1 or v2 request is, before the path is looked at.
    expect((await server.call('/v1/no-such-route')).status).toBe(401)
    const unknown = await server.call('/v1/no-such-route', { key: apiKey })
    expect(unknown.status).toBe(404)
    expect(unknown.headers['ratelimit-remaining']).toBe('2')
    const wrongMethod = await server.call('/v2/data-structures', { method: 'POST', key: apiKey })
    expect(wrongMethod.status).toBe(405)
    expect(wrongMethod.headers['ratelimit-remaining']).toBe('1')
    expect((await server.call('/v2/nothing/here', { key: apiKey })).status).toBe(404)
    expect((await server.call('/v2/data-structures', { key: apiKey })).status).toBe(429)
    // Outside v1 and v2, an unknown path is a plain 404, asking no key.
    const elsewhere = await server.call('/no-such-route')
    expect(elsewhere.status).toBe(404)
    expect(elsewhere.headers['ratelimit-limit']).toBeUndefined()
  })

  it('takes its limit from RATE_LIMIT_PER_SECOND', async () => {
    server = await startTestServer({ RATE_LIMIT_PER_SECOND: '3' })
    const { apiKey } = await server.load(smallFixture())
    const replies: Reply[] = []
    for (let index = 0; index < 4; index++) replies.push(await server.call('/v2/data-structures', { key: apiKey }))
    expect(statuses(replies)).toEqual([200, 200, 200, 429])
    expect(replies[0].headers['ratelimit-limit']).toBe('3')
  })
})

describe('rate limit: counters another process holds locked', () => {
  it('answers every request, and liveness, while the counter file stays locked', async () => {
    const dataDir = tempDataDir()
    const server = await startKitServer({ DATA_DIR: dataDir })
    try {
      expect((await server.api('/v2/data-structures')).status).toBe(200)
      // A process stopped inside a write transaction of the counter file (a CLI, a frozen container).
      const holder = new DatabaseSync(join(dataDir, 'commission-api.rate-limits.sqlite'))
      holder.exec('BEGIN IMMEDIATE')
      holder.exec('DELETE FROM rate_windows WHERE 0')
      try {
        const replies = await Promise.all([
          ...Array.from({ length: 6 }, () => server.api('/v2/data-structures')),
          server.call('/health/live'),
          server.call('/v1/users?limit=1', { key: 'cak_not-a-key-of-anyone-0000000000' }),
        ])
        expect(replies.map((reply) => reply.status)).toEqual([200, 200, 200, 200, 200, 200, 200, 401])
        expect(replies[0].headers['ratelimit-limit']).toBe('80')
      } finally {
        holder.exec('ROLLBACK')
        holder.close()
      }
    } finally {
      await server.close()
    }
  })
})
