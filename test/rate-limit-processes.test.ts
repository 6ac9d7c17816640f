import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PRINCIPAL_FRESH_MS } from '../src/auth/principal-cache.ts'
import { batchSize } from '../src/rate-limit/batched-counts.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { runCli, type ServerProcess, startServerProcess, tempDataDir } from './helpers/process.ts'
import { call, type Reply } from './helpers/server.ts'

const LIMIT = 5

describe('rate limit across instances', () => {
  const dataDir = tempDataDir()
  let servers: ServerProcess[] = []
  let urls: string[] = []
  let fixtures = 0

  /** A new company in the shared store, through the CLI, as an operator would add one. */
  function newCompanyKey(): string {
    const file = join(dataDir, `fixture-${++fixtures}.json`)
    writeFileSync(file, JSON.stringify(smallFixture(`Shared${fixtures}`)))
    const result = runCli(['load', file, '--json'], { DATA_DIR: dataDir })
    expect(result.code, result.stderr).toBe(0)
    return JSON.parse(result.stdout).api_key as string
  }

  beforeAll(async () => {
    servers = [0, 1].map(() => startServerProcess({ DATA_DIR: dataDir, DEMO: 'off', RATE_LIMIT_PER_SECOND: String(LIMIT) }))
    urls = await Promise.all(servers.map(async (server) => (await server.waitFor(/listening on (http:\/\/\S+)/))[1]))
  })
  afterAll(async () => {
    for (const server of servers) await server.stop()
  })

  it('two server processes sharing one SQLite file share one budget per company', async () => {
    // The test needs all its requests inside one window of one second. Should a run on a loaded machine take
    // longer, it proves nothing either way, and is repeated with a fresh company (so a fresh window).
    for (let attempt = 1; attempt <= 3; attempt++) {
      const key = newCompanyKey()
      const started = performance.now()
      const replies: Reply[] = []
      for (let index = 0; index <= LIMIT; index++) replies.push(await call(`${urls[index % 2]}/v2/data-structures`, { key }))
      const other = await call(`${urls[(LIMIT + 1) % 2]}/v2/data-structures`, { key })
      if (performance.now() - started >= 1000) continue

      // Alternating between the two processes, the remaining budget falls by one at every request.
      expect(replies.slice(0, LIMIT).map((reply) => reply.status)).toEqual(Array(LIMIT).fill(200))
      expect(replies.slice(0, LIMIT).map((reply) => reply.headers['ratelimit-remaining'])).toEqual(['4', '3', '2', '1', '0'])
      expect(replies[LIMIT].status).toBe(429)
      expect(replies[LIMIT].body).toEqual({ message: expect.any(String), type: 'TooManyRequestsError' })
      expect(other.status).toBe(429)
      return
    }
    throw new Error('no attempt fitted in one second')
  })
})

describe('rate limit across three instances, at 80 requests per second', () => {
  const dataDir = tempDataDir()
  let servers: ServerProcess[] = []
  let urls: string[] = []
  let fixtures = 0

  beforeAll(async () => {
    servers = [0, 1, 2].map(() =>
      startServerProcess({ DATA_DIR: dataDir, DEMO: 'off', RATE_LIMIT_PER_SECOND: '80' }, ['serve', '--role', 'api']),
    )
    urls = await Promise.all(servers.map(async (server) => (await server.waitFor(/listening on (http:\/\/\S+)/))[1]))
  })
  afterAll(async () => {
    for (const server of servers) await server.stop()
  })

  it('lets through at least 80 and at most 80 + 2 batches of a burst of 150 spread over three processes', async () => {
    const limit = 80
    // As in the test above: every request must fall in one window; a run too slow for that is repeated.
    for (let attempt = 1; attempt <= 3; attempt++) {
      const file = join(dataDir, `burst-${++fixtures}.json`)
      writeFileSync(file, JSON.stringify(smallFixture(`Burst${fixtures}`)))
      const loaded = runCli(['load', file, '--json'], { DATA_DIR: dataDir })
      expect(loaded.code, loaded.stderr).toBe(0)
      const key = JSON.parse(loaded.stdout).api_key as string
      const started = performance.now()
      const replies: Reply[] = []
      for (let wave = 0; wave < 150; wave += 30) {
        replies.push(
          ...(await Promise.all(Array.from({ length: 30 }, (_, index) => call(`${urls[(wave + index) % 3]}/v2/data-structures`, { key })))),
        )
      }
      if (performance.now() - started >= 900) continue

      const passed = replies.filter((reply) => reply.status === 200).length
      expect(replies.filter((reply) => reply.status !== 200).map((reply) => reply.status)).toEqual(Array(150 - passed).fill(429))
      // Never below the limit; over it by at most the batches the two other instances had not written yet.
      expect(passed).toBeGreaterThanOrEqual(limit)
      expect(passed).toBeLessThanOrEqual(limit + 2 * batchSize(limit))
      // Each instance counted the others': alone, each would have let its 50 through.
      return
    }
    throw new Error('no attempt fitted in one second')
  })

  it('refuses on every instance, within a second, a key whose owner another instance archived', async () => {
    const file = join(dataDir, 'leaver.json')
    writeFileSync(file, JSON.stringify({ ...smallFixture('Leaver'), api_keys: [{ user: 'owner@leaver.example' }] }))
    const loaded = runCli(['load', file, '--json'], { DATA_DIR: dataDir })
    expect(loaded.code, loaded.stderr).toBe(0)
    const key = JSON.parse(loaded.stdout).api_key as string
    // Every instance has just authenticated the key, and keeps it for a moment.
    for (const url of urls) expect((await call(`${url}/v2/data-structures`, { key })).status).toBe(200)
    const archived = await call(`${urls[0]}/v1/users/archive/bulk`, {
      method: 'DELETE',
      key,
      body: { data: [{ user: 'owner@leaver.example' }] },
    })
    expect(archived.status).toBe(200)
    // The instance that wrote it knows at once; the others once their entry is PRINCIPAL_FRESH_MS (half a second) old.
    expect((await call(`${urls[0]}/v2/data-structures`, { key })).status).toBe(401)
    await new Promise((done) => setTimeout(done, PRINCIPAL_FRESH_MS))
    for (const url of urls) expect((await call(`${url}/v2/data-structures`, { key })).status).toBe(401)
  })
})
