import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
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
