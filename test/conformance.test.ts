import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { demoFixture } from '../src/fixtures/demo.ts'
import { ImportWorker } from '../src/imports/worker.ts'
import { requestLines } from './helpers/client-support.ts'
import { runCliAsync } from './helpers/process.ts'
import { KIT_DEMO_KEY, startKitServer } from './helpers/kit-server.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'

/** The table's rows: check, result, evidence, split on the two-space column gaps. */
function resultsOf(stdout: string): Array<{ check: string; result: string }> {
  return stdout
    .split('\n')
    .slice(2)
    .filter((line) => / {2}(pass|FAIL|info|skip) {2}/.test(line))
    .map((line) => {
      const match = / {2}(pass|FAIL|info|skip) {2}/.exec(line)!
      return { check: line.slice(0, match.index).trim(), result: match[1] }
    })
}

describe('the conformance command against our server', () => {
  let server: TestServer
  let worker: ImportWorker
  let apiKey: string

  beforeAll(async () => {
    server = await startTestServer({}, {}, { runningClock: true })
    ;({ apiKey } = await server.load(demoFixture()))
    worker = new ImportWorker({ store: server.store, clock: server.clock, pollMs: 20 })
    worker.start()
  })
  afterAll(async () => {
    await worker.stop()
    await server.close()
  })

  it('passes every read-only check, and writes nothing', async () => {
    const before = requestLines(server).length
    // It opens no store: the data directory it would use is never made.
    const dataDir = join(tmpdir(), `commission-api-unused-${process.pid}-${Date.now()}`)
    const result = await runCliAsync(['conformance', '--base-url', server.url, '--key', apiKey, '--table', 'deals'], { DATA_DIR: dataDir })
    expect(result.code, result.stdout).toBe(0)
    expect(existsSync(dataDir)).toBe(false)
    const lines = result.stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^check +result +evidence$/)
    expect(lines.at(-1)).toMatch(/^\d+ passed, 0 failed$/)
    const results = resultsOf(result.stdout)
    expect(results.filter((row) => row.result === 'pass').length).toBe(Number(lines.at(-1)!.split(' ')[0]))
    expect(results.length).toBeGreaterThan(60)
    for (const area of [
      'auth',
      'discovery',
      'fields',
      'rows',
      'pagination',
      'filters',
      'bounds',
      'quota values',
      'v1 users',
      'v1 reporting',
      'v1 table deals',
    ]) {
      expect(
        results.some((row) => row.check.startsWith(area) && row.result === 'pass'),
        area,
      ).toBe(true)
    }
    expect(result.stderr).toBe('')
    const methods = new Set(
      requestLines(server)
        .slice(before)
        .map((line) => line.req.method),
    )
    expect(methods).toEqual(new Set(['GET']))
  })

  it('follows a next_url on another origin (PUBLIC_URL, a proxy) on the base URL, as the client does', async () => {
    const behind = await startTestServer({ PUBLIC_URL: 'http://api.example.test' }, {}, { runningClock: true })
    try {
      const { apiKey: key } = await behind.load(demoFixture())
      const result = await runCliAsync(['conformance', '--base-url', behind.url, '--key', key, '--table', 'deals'])
      expect(result.code, result.stdout).toBe(0)
      expect(result.stdout.trim().split('\n').at(-1)).toMatch(/^\d+ passed, 0 failed$/)
      const walks = resultsOf(result.stdout).filter((row) => row.check.endsWith('next_url walk'))
      expect(walks.length).toBeGreaterThan(2)
      expect(walks.every((row) => row.result === 'pass')).toBe(true)
    } finally {
      await behind.close()
    }
  })

  it('with --write, says it writes and passes the upsert, import and archive checks too', async () => {
    const result = await runCliAsync(['conformance', '--base-url', server.url, '--key', apiKey, '--table', 'deals', '--write', '--json'])
    expect(result.code, result.stdout).toBe(0)
    expect(result.stderr).toContain('use it only on a test company')
    const report = JSON.parse(result.stdout)
    expect(report.failed).toBe(0)
    const checks = report.results.map((row: any) => row.check)
    for (const area of [
      'users upsert',
      'users update',
      'users repeated email',
      'users all-or-nothing',
      'debounce',
      'attributions',
      'archive',
      'table records upsert',
    ]) {
      expect(
        checks.some((check: string) => check.startsWith(area)),
        area,
      ).toBe(true)
    }
    expect(report.results.filter((row: any) => row.result === 'pass').length).toBe(report.passed)
  })
})

describe('the conformance command against a service that takes other attribution shapes', () => {
  it('skips the checks that need its guess of them, which the specification does not show, rather than failing them', async () => {
    const kit = await startKitServer()
    try {
      // The manager and group routes refuse the command's bodies, as a service with other shapes would.
      for (const path of ['/v1/users/managers/bulk', '/v1/users/groups/bulk']) {
        const fault = { method: 'PUT', path, status: 400, times: 5 }
        expect((await kit.admin(`/admin/companies/${kit.demoId}/faults`, { method: 'POST', body: fault })).status).toBe(201)
      }
      const result = await runCliAsync(['conformance', '--base-url', kit.url, '--key', KIT_DEMO_KEY, '--write', '--json'])
      const report = JSON.parse(result.stdout)
      const outcome = (check: string) => report.results.find((row: any) => row.check === check)?.result
      expect(outcome('attributions: users, managers and groups each get their own import')).toBe('skip')
      expect(outcome('archive: a user who manages someone in the archive period is refused')).toBe('skip')
      expect(report.failed, JSON.stringify(report.results.filter((row: any) => row.result === 'fail'))).toBe(0)
      expect(result.code).toBe(0)
    } finally {
      await kit.close()
    }
  }, 60_000)
})

describe('the conformance command against a service that strays from the specification', () => {
  let stray: Server
  let url: string

  beforeAll(async () => {
    // Answers every request 200 with an empty list, key or no key.
    stray = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"data": []}')
    })
    stray.listen(0, '127.0.0.1')
    await once(stray, 'listening')
    const address = stray.address()
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  })
  afterAll(() => new Promise<void>((resolve) => stray.close(() => resolve())))

  it('reports each failed check with its evidence and exits 1', async () => {
    const result = await runCliAsync(['conformance', '--base-url', url, '--key', 'any-key'])
    expect(result.code).toBe(1)
    const results = resultsOf(result.stdout)
    expect(results.find((row) => row.check === 'auth: no key is 401')).toEqual({ check: 'auth: no key is 401', result: 'FAIL' })
    expect(result.stdout).toMatch(/status is 200, expected 401/)
    const [passed, failed] = /^(\d+) passed, (\d+) failed$/.exec(result.stdout.trim().split('\n').at(-1)!)!.slice(1).map(Number)
    expect(failed).toBe(results.filter((row) => row.result === 'FAIL').length)
    expect(failed).toBeGreaterThan(3)
    expect(passed).toBe(results.filter((row) => row.result === 'pass').length)
  })
})
