import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { connect, createServer, type Socket } from 'node:net'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { parse } from 'yaml'
import { batchSize } from '../src/rate-limit/batched-counts.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { finishedImport } from './helpers/operations.ts'
import { exchange, statusesIn } from './helpers/raw-http.ts'
import { type ServerProcess, startServerProcess, tempDataDir } from './helpers/process.ts'
import { call, type Reply } from './helpers/server.ts'

const CONFIG = new URL('../deploy/nginx.conf', import.meta.url)
/** How docker-compose.yml stops an API instance behind this nginx (its drain and the shutdown's bound). */
const { SHUTDOWN_DRAIN_MS, SHUTDOWN_TIMEOUT_MS } = (
  parse(readFileSync(new URL('../docker-compose.yml', import.meta.url), 'utf8'), { merge: true }) as {
    services: Record<string, { environment: Record<string, string> }>
  }
).services['api-1'].environment
const ADMIN_TOKEN = 'nginx-test-admin-token'
const RATE_LIMIT = 80

/** The nginx binary, or null when none is installed (Debian puts it in /usr/sbin, often off a user's PATH). */
function findNginx(): string | null {
  for (const candidate of ['nginx', '/usr/sbin/nginx', '/usr/local/sbin/nginx']) {
    if (spawnSync(candidate, ['-v']).status === 0) return candidate
  }
  return null
}

const NGINX = findNginx()

async function freePort(): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  server.close()
  await once(server, 'close')
  return typeof address === 'object' && address ? address.port : 0
}

/** `text` with `from` replaced by `to`, which must occur exactly `times` times: the test follows the file's shape. */
function replaceOnce(text: string, from: string, to: string, times = 1): string {
  expect(text.split(from), `deploy/nginx.conf should contain "${from}" ${times} times`).toHaveLength(times + 1)
  return text.replaceAll(from, to)
}

/**
 * deploy/nginx.conf as it is, with the addresses of the compose file replaced by local ones, inside the main
 * configuration that the nginx image provides around conf.d (here: paths of a temporary directory).
 */
function nginxConfiguration(dir: string, ports: { api1: number; api2: number; public: number; operator: number }): string {
  let site = readFileSync(CONFIG, 'utf8')
  // Each instance is a server and a backup.
  site = replaceOnce(site, 'server api-1:3000 ', `server 127.0.0.1:${ports.api1} `, 2)
  site = replaceOnce(site, 'server api-2:3000 ', `server 127.0.0.1:${ports.api2} `, 2)
  site = replaceOnce(site, 'listen 80;', `listen 127.0.0.1:${ports.public};`)
  site = replaceOnce(site, 'listen 8080;', `listen 127.0.0.1:${ports.operator};`)
  site = replaceOnce(site, 'access_log /var/log/nginx/access.log ', `access_log ${join(dir, 'access.log')} `, 2)
  // An answer is awaited 120 s on the public port: 3 s here, for the test of a request that times out.
  site = replaceOnce(site, 'proxy_read_timeout 120s;', 'proxy_read_timeout 3s;')
  writeFileSync(join(dir, 'commission-api.conf'), site)
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((kind) => {
    mkdirSync(join(dir, kind), { recursive: true })
    return `${kind}_temp_path ${join(dir, kind)};`
  })
  return [
    'daemon off;',
    'worker_processes 1;',
    `pid ${join(dir, 'nginx.pid')};`,
    `error_log ${join(dir, 'error.log')} warn;`,
    // As root, nginx's workers would run as `nobody`, who cannot write the temporary directories.
    ...(process.getuid?.() === 0 ? ['user root;'] : []),
    'events { worker_connections 1024; }',
    // The image's own http block: its access log, in a format with the whole request line, around conf.d.
    `http { log_format main '$remote_addr "$request" $status'; access_log ${join(dir, 'image-access.log')} main; ${temp.join(' ')} include ${join(dir, 'commission-api.conf')}; }`,
  ].join('\n')
}

interface Nginx {
  child: ChildProcess
  /** The access log so far. */
  log(): string
}

/** The request ids an instance logged so far. */
const loggedIds = (instance: ServerProcess) =>
  new Set(
    instance
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => (JSON.parse(line) as { request_id?: string }).request_id),
  )

/** Waits until `done` holds: a log line is written after its answer, and read from a pipe later still. */
async function eventually(done: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = performance.now() + 10_000
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error(`never happened: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

describe.skipIf(NGINX === null)(
  `deploy/nginx.conf in a real nginx, in front of two API instances and a worker on one embedded store${NGINX ? '' : ' (NOT RUN: nginx is not installed; .ci/run installs it with apt-get where it can)'}`,
  () => {
    const dataDir = tempDataDir()
    const nginxDir = tempDataDir()
    let api1: ServerProcess
    let api2: ServerProcess
    let worker: ServerProcess
    let nginx: Nginx
    let publicUrl: string
    let operatorUrl: string
    let api1Url: string
    let api2Url: string
    let companies = 0

    /** nginx's prefix, configuration and error log: the temporary directory's. */
    const nginxArgs = () => ['-p', `${nginxDir}/`, '-c', join(nginxDir, 'nginx.conf'), '-e', join(nginxDir, 'error.log')]

    /** Which ids each instance answered, once every one of them is in the log of one instance. */
    async function servedBy(ids: string[]): Promise<[string[], string[]]> {
      await eventually(() => ids.every((id) => loggedIds(api1).has(id) || loggedIds(api2).has(id)), `${ids.length} ids logged`)
      const [one, two] = [loggedIds(api1), loggedIds(api2)]
      return [ids.filter((id) => one.has(id)), ids.filter((id) => two.has(id))]
    }

    /** Resolves once each instance has logged everything it answered before now (its lines are in order). */
    async function logsCaughtUp(): Promise<void> {
      const marker = `marker-${performance.now()}`
      await Promise.all(
        [api1, api2].map((instance) =>
          call(`${instance === api1 ? api1Url : api2Url}/health/live`, { headers: { 'x-request-id': marker } }),
        ),
      )
      await eventually(() => loggedIds(api1).has(marker) && loggedIds(api2).has(marker), 'marker logged by both instances')
    }

    /** A new company, created through the operator's port as an operator would; returns its key. */
    async function newCompany(): Promise<{ companyId: string; key: string }> {
      const reply = await call(`${operatorUrl}/admin/companies`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        body: smallFixture(`Balanced${++companies}`),
      })
      expect(reply.status, reply.text).toBe(201)
      return { companyId: reply.body.company_id as string, key: reply.body.api_key as string }
    }
    const newCompanyKey = async () => (await newCompany()).key

    /** How an API instance is started, as docker-compose.yml starts one. */
    const instance = {
      DATA_DIR: dataDir,
      DEMO: 'off',
      TRUST_PROXY: 'on',
      ADMIN_TOKEN,
      LOG_LEVEL: 'info',
      SHUTDOWN_DRAIN_MS,
      SHUTDOWN_TIMEOUT_MS,
    }

    beforeAll(async () => {
      chmodSync(nginxDir, 0o755)
      api1 = startServerProcess(instance, ['serve', '--role', 'api'])
      api2 = startServerProcess(instance, ['serve', '--role', 'api'])
      worker = startServerProcess({ DATA_DIR: dataDir, WORKER_HEALTH_PORT: '0', IMPORT_POLL_MS: '20' }, ['serve', '--role', 'worker'])
      const [[, url1], [, url2]] = await Promise.all([
        api1.waitFor(/listening on (http:\/\/\S+)/),
        api2.waitFor(/listening on (http:\/\/\S+)/),
      ])
      await worker.waitFor(/health and metrics on/)
      api1Url = url1
      api2Url = url2
      const ports = {
        api1: Number(new URL(url1).port),
        api2: Number(new URL(url2).port),
        public: await freePort(),
        operator: await freePort(),
      }
      writeFileSync(join(nginxDir, 'nginx.conf'), nginxConfiguration(nginxDir, ports))
      publicUrl = `http://127.0.0.1:${ports.public}`
      operatorUrl = `http://127.0.0.1:${ports.operator}`

      const check = spawnSync(NGINX!, ['-t', ...nginxArgs()], { encoding: 'utf8' })
      if (check.status !== 0) throw new Error(`nginx -t refuses the configuration:\n${check.stderr}`)
      const child = spawn(NGINX!, nginxArgs(), { stdio: 'ignore' })
      nginx = { child, log: () => readFileSync(join(nginxDir, 'access.log'), 'utf8') }
      for (;;) {
        const answer = await call(`${publicUrl}/health/live`).catch(() => null)
        if (answer?.status === 200) break
        if (child.exitCode !== null) throw new Error(`nginx exited: ${readFileSync(join(nginxDir, 'error.log'), 'utf8')}`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    })

    afterAll(async () => {
      if (nginx && nginx.child.exitCode === null) {
        nginx.child.kill('SIGTERM')
        await once(nginx.child, 'exit')
      }
      await Promise.all([api1, api2, worker].filter(Boolean).map((process) => process.stop()))
    })

    it('passes nginx -t', () => {
      const check = spawnSync(NGINX!, ['-t', ...nginxArgs()], { encoding: 'utf8' })
      expect(check.status, check.stderr).toBe(0)
      expect(check.stderr).toContain('test is successful')
    })

    it('balances the requests over both instances', async () => {
      const key = await newCompanyKey()
      const ids = Array.from({ length: 20 }, (_, index) => `balance-${index}`)
      for (const id of ids) {
        const reply = await call(`${publicUrl}/v2/data-structures`, { key, headers: { 'x-request-id': id } })
        expect(reply.status).toBe(200)
      }
      const [one, two] = await servedBy(ids)
      expect(one.length + two.length).toBe(ids.length)
      expect(Math.min(one.length, two.length)).toBeGreaterThanOrEqual(5)
    })

    it('carries X-Request-Id end to end: kept when the client sends a usable one, made by nginx otherwise', async () => {
      const key = await newCompanyKey()
      const sent = await call(`${publicUrl}/v2/data-structures`, { key, headers: { 'x-request-id': 'trace-1.a:b' } })
      expect(sent.headers['x-request-id']).toBe('trace-1.a:b')

      const made = await call(`${publicUrl}/v2/data-structures`, { key })
      const unusable = await call(`${publicUrl}/v2/data-structures`, { key, headers: { 'x-request-id': 'not usable!' } })
      for (const reply of [made, unusable]) expect(reply.headers['x-request-id']).toMatch(/^[0-9a-f]{32}$/)

      // One id in the answer, in the log line of the instance that answered, and in nginx's access log.
      const ids = ['trace-1.a:b', made.headers['x-request-id'], unusable.headers['x-request-id']] as string[]
      const [one, two] = await servedBy(ids)
      expect(one.length + two.length).toBe(3)
      await eventually(
        () => ids.every((id) => nginx.log().includes(`request_id=${id} `) || nginx.log().includes(`request_id=${id}\n`)),
        'ids in the access log',
      )
      // nginx's own answers carry one too.
      expect((await call(`${publicUrl}/metrics`)).headers['x-request-id']).toMatch(/^[0-9a-f]{32}$/)
    })

    it('writes no API key to its access log: not an id that carries one, not one in the query string', async () => {
      const key = await newCompanyKey()
      const carrying = await call(`${publicUrl}/v2/data-structures`, { key, headers: { 'x-request-id': `trace-${key}` } })
      expect(carrying.headers['x-request-id']).toMatch(/^[0-9a-f]{32}$/)
      const queried = await call(`${publicUrl}/v2/data-structures?limit=5&api_key=${key}`, {
        key,
        headers: { 'x-request-id': 'key-in-query' },
      })
      expect(queried.status).toBe(200)
      await eventually(() => nginx.log().includes('request_id=key-in-query'), 'the request in the access log')
      expect(nginx.log()).toContain('"GET /v2/data-structures HTTP/1.1" 200')
      // A key in the path, as it came and percent-encoded.
      for (const [index, path] of [`/v2/data-structures/${key}/fields`, `/v2/reporting/%63${key.slice(1)}/statements`].entries()) {
        const inPath = await call(`${publicUrl}${path}`, { key, headers: { 'x-request-id': `key-in-path-${index}` } })
        expect(inPath.status).toBe(404)
        await eventually(() => nginx.log().includes(`request_id=key-in-path-${index}`), 'the request in the access log')
      }
      expect(nginx.log()).toContain('"GET /[redacted] HTTP/1.1" 404')
      expect(nginx.log()).not.toContain(key)
      expect(nginx.log()).not.toContain(key.slice(1))
      // The image's own access log, with the whole request line, is replaced by each server's: nothing goes there.
      expect(readFileSync(join(nginxDir, 'image-access.log'), 'utf8')).toBe('')
    })

    it('tells the instances the address it saw, whatever X-Forwarded-For a client sends', async () => {
      const key = await newCompanyKey()
      await call(`${publicUrl}/v2/data-structures`, { key, headers: { 'x-request-id': 'forwarded-1', 'x-forwarded-for': '203.0.113.9' } })
      await servedBy(['forwarded-1'])
      const line = [...api1.output().split('\n'), ...api2.output().split('\n')].find((candidate) =>
        candidate.includes('"request_id":"forwarded-1"'),
      )
      expect(JSON.parse(line!).req.remoteAddress).toBe('127.0.0.1')
    })

    it('serves an HTTP/1.0 request that names no host, its links built from the address it came to, as an instance alone does', async () => {
      const key = await newCompanyKey()
      const received = await exchange(publicUrl, `GET /v1/users?limit=1 HTTP/1.0\r\nX-API-Key: ${key}\r\n\r\n`)
      expect(statusesIn(received)).toEqual([200])
      const page = JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4))
      expect(page.next).toBe(`${publicUrl}/v1/users?offset=1&limit=1`)
    })

    it("answers what nginx refuses itself on the public port in the service's JSON bodies, never its HTML pages", async () => {
      const key = await newCompanyKey()
      const get = (target: string, headers = '') =>
        `GET ${target} HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${key}\r\n${headers}Connection: close\r\n\r\n`
      const refusals: [string, string, number, string][] = [
        ['a header line without a colon', get('/v2/data-structures', 'not a header\r\n'), 400, 'request'],
        ['a path that is not percent-encoding', get('/v2/data-structures/%zz/fields'), 400, 'request'],
        ['a transfer coding nginx does not implement', get('/v2/data-structures', 'Transfer-Encoding: gzip, chunked\r\n'), 400, 'request'],
        ['headers over 16 KiB', get('/v2/data-structures', `X-Padding: ${'a'.repeat(20_000)}\r\n`), 431, 'headers'],
        ['a request line over 16 KiB', get(`/v2/data-structures?${'a'.repeat(20_000)}`), 414, 'request'],
      ]
      for (const [what, bytes, status, resource] of refusals) {
        const received = await exchange(publicUrl, bytes)
        expect(statusesIn(received), what).toEqual([status])
        expect(received.toLowerCase(), what).toContain('content-type: application/json')
        expect(JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)), what).toEqual({
          count: 1,
          errors: [{ error: 'ValidationError', resource, description: expect.any(String) }],
        })
      }
      // Headers of 9 KiB, which nginx's default buffers refused, reach the service, as they would without nginx.
      expect(statusesIn(await exchange(publicUrl, get('/v2/data-structures', `X-Padding: ${'a'.repeat(9_000)}\r\n`)))).toEqual([200])
    })

    it('answers a request an instance took but did not answer in time 504, saying it may have been done, never sent again', async () => {
      const { companyId, key } = await newCompany()
      // Faults are each instance's own: both hold this one, whichever nginx picks.
      for (const instanceUrl of [api1Url, api2Url]) {
        const set = await call(`${instanceUrl}/admin/companies/${companyId}/faults`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
          body: { method: 'POST', path: '/v1/tables/deals/records/bulk', delay_ms: 4500, times: 1 },
        })
        expect(set.status, set.text).toBe(201)
      }
      const reply = await call(`${publicUrl}/v1/tables/deals/records/bulk`, {
        method: 'POST',
        key,
        headers: { 'x-request-id': 'timed-out-post' },
        body: [{ id: 'D-TIMED-OUT', name: 'Late' }],
      })
      expect(reply.status).toBe(504)
      expect(reply.body).toEqual({ message: expect.stringContaining('may have been done'), type: 'GatewayTimeoutError' })
      await eventually(() => nginx.log().includes('request_id=timed-out-post'), 'the request in the access log')
      // One instance tried: a POST is never sent to another.
      const line = nginx
        .log()
        .split('\n')
        .find((candidate) => candidate.includes('request_id=timed-out-post'))!
      expect(line).toMatch(/ 504 .* upstream=127\.0\.0\.1:\d+ request_id/)
      expect(reply.headers['x-request-id']).toBe('timed-out-post')
      // The tests after this one count on both instances: nginx leaves the one that timed out out for a second.
      let probe = 0
      await eventually(async () => {
        const ids = [`after-timeout-${probe++}`, `after-timeout-${probe++}`]
        for (const id of ids) await call(`${publicUrl}/health/live`, { headers: { 'x-request-id': id } })
        const [one, two] = await servedBy(ids)
        return one.length === 1 && two.length === 1
      }, 'both instances served again')
    })

    it('does not serve /metrics or /admin on the public port, in any spelling; the operator port and the instances do', async () => {
      const paths = [
        '/metrics',
        '/metrics/',
        '/METRICS',
        '/%6Detrics',
        '//metrics',
        '/v2/../metrics',
        '/metrics?x=1',
        '/admin/companies',
        '/Admin/companies/0',
        '/%61dmin/companies',
      ]
      for (const [index, path] of paths.entries()) {
        for (const method of ['GET', 'POST'] as const) {
          const headers = { 'x-request-id': `denied-${index}-${method}`, authorization: `Bearer ${ADMIN_TOKEN}` }
          const reply = await call(`${publicUrl}${path}`, { method, headers, body: method === 'POST' ? smallFixture('Denied') : undefined })
          expect(reply.status, `${method} ${path}`).toBe(404)
          expect(reply.body).toEqual({ message: expect.any(String), resource: 'route', type: 'NotFoundError' })
        }
      }
      // None of them reached an instance.
      await logsCaughtUp()
      const reached = [...loggedIds(api1), ...loggedIds(api2)].filter((id) => id?.startsWith('denied-'))
      expect(reached).toEqual([])

      const scraped = await call(`${operatorUrl}/metrics`)
      expect(scraped.status).toBe(200)
      expect(scraped.text).toContain('commission_api_http_requests_total')
      expect((await call(`${api1Url}/metrics`)).status).toBe(200)
      expect(await newCompanyKey()).toMatch(/^cak_/)
    })

    it(`shares the rate limit: ${RATE_LIMIT} requests per second per company in total, over both instances`, async () => {
      // Every request must fall in one window of one second; a run that took longer on a loaded machine proves
      // nothing either way, and is repeated with a fresh company (so a fresh window).
      for (let attempt = 1; attempt <= 3; attempt++) {
        const key = await newCompanyKey()
        const ids = Array.from({ length: RATE_LIMIT + 20 }, (_, index) => `rate-${attempt}-${index}`)
        const started = performance.now()
        const replies: Reply[] = []
        for (let wave = 0; wave < ids.length; wave += 20) {
          const batch = ids.slice(wave, wave + 20)
          replies.push(
            ...(await Promise.all(batch.map((id) => call(`${publicUrl}/v2/data-structures`, { key, headers: { 'x-request-id': id } })))),
          )
        }
        if (performance.now() - started >= 900) continue

        const statuses = replies.map((reply) => reply.status)
        // Never fewer than the limit; over it by at most one batch of the other instance (docs/decisions.md).
        const passed = statuses.filter((status) => status === 200).length
        expect(passed).toBeGreaterThanOrEqual(RATE_LIMIT)
        expect(passed).toBeLessThanOrEqual(RATE_LIMIT + batchSize(RATE_LIMIT))
        expect(statuses.filter((status) => status === 429)).toHaveLength(replies.length - passed)
        expect(replies.find((reply) => reply.status === 429)?.body).toEqual({ message: expect.any(String), type: 'TooManyRequestsError' })
        // Both instances answered: each alone would have let all 100 through.
        const [one, two] = await servedBy(ids)
        expect(one.length).toBeGreaterThan(0)
        expect(two.length).toBeGreaterThan(0)
        return
      }
      throw new Error('no attempt fitted in one second')
    })

    it('lets a body over the service limit reach the service, which answers its own JSON 413; nginx answers the same past its own', async () => {
      const key = await newCompanyKey()
      const configured = Number(/client_max_body_size (\d+)m;/.exec(readFileSync(CONFIG, 'utf8'))?.[1])
      // Above the service's limit (BODY_LIMIT_MB, 32 MiB by default), under nginx's.
      expect(configured).toBeGreaterThan(33)
      const body = `[${'"x",'.repeat((33 * 1024 * 1024) / 4)}"x"]`
      // Several times: the instance must read the rest of the body before its answer, or nginx sees a reset.
      const ids = ['large-body-1', 'large-body-2', 'large-body-3', 'large-body-4']
      const replies: Reply[] = []
      for (const id of ids)
        replies.push(
          await call(`${publicUrl}/v1/tables/deals/records/bulk`, { method: 'POST', key, body, headers: { 'x-request-id': id } }),
        )
      for (const reply of replies) {
        expect(reply.status).toBe(413)
        expect(reply.body).toEqual({ count: 1, errors: [{ error: 'ValidationError', resource: 'body', description: expect.any(String) }] })
      }
      const [one, two] = await servedBy(ids)
      expect(one.length + two.length).toBe(ids.length)
      const served = replies[0]

      const tooLarge = `[${'"x",'.repeat(((configured + 1) * 1024 * 1024) / 4)}"x"]`
      const refused = await call(`${publicUrl}/v1/tables/deals/records/bulk`, {
        method: 'POST',
        key,
        body: tooLarge,
        headers: { 'x-request-id': 'larger-body' },
      })
      expect(refused.status).toBe(413)
      expect(refused.body).toEqual(served.body)
      await logsCaughtUp()
      expect(loggedIds(api1).has('larger-body') || loggedIds(api2).has('larger-body')).toBe(false)
    })

    it('has the worker apply an import posted through the load balancer', async () => {
      const key = await newCompanyKey()
      const upsert = await call(`${publicUrl}/v1/users/bulk`, {
        method: 'PUT',
        key,
        body: { data: [{ email: 'via-nginx@acme.example', name: 'Via' }] },
      })
      expect(upsert.status).toBe(200)
      expect((await finishedImport(publicUrl, key, upsert.body.import_id)).error).toBe(false)
      const users = await call(`${publicUrl}/v1/users?limit=2000`, { key })
      expect(users.body.data.map((user: { email: string }) => user.email)).toContain('via-nginx@acme.example')
    })

    it('loses no request while one instance stops gracefully, POSTs included, nor in a rolling restart; with none left, answers 503 in JSON', async () => {
      const keys = await Promise.all([1, 2, 3, 4, 5, 6].map(() => newCompanyKey()))
      type Sent = { status: number; at: number; path: string; id: string }
      // Six clients, each under its company's rate limit: reads and user upserts (a PUT, which nginx may send
      // again to the other instance), and record upserts (a POST, which it never sends twice). They run until
      // `until`; each phase sets it.
      const streams = (phase: string, until: { at: number }) => {
        const replies: Sent[] = []
        const client = async (key: string, index: number) => {
          for (let round = 0; performance.now() < until.at; round++) {
            const headers = { 'x-request-id': `${phase}-${index}-${round}` }
            const [path, reply] =
              index >= 3
                ? [
                    'POST /v1/tables/deals/records/bulk',
                    await call(`${publicUrl}/v1/tables/deals/records/bulk`, {
                      method: 'POST',
                      key,
                      headers,
                      body: [{ deal_id: `D-${round}`, deal_name: `Round ${round}` }],
                    }),
                  ]
                : index === 2 && round % 2 === 1
                  ? [
                      'PUT /v1/users/bulk',
                      await call(`${publicUrl}/v1/users/bulk`, {
                        method: 'PUT',
                        key,
                        headers,
                        body: { data: [{ email: `${phase}-${round}@acme.example` }] },
                      }),
                    ]
                  : ['GET /v2/data-structures', await call(`${publicUrl}/v2/data-structures`, { key, headers })]
            replies.push({ status: reply.status, at: performance.now(), path, id: headers['x-request-id'] })
            await new Promise((resolve) => setTimeout(resolve, index >= 3 ? 12 : 20))
          }
        }
        return { replies, done: Promise.all(keys.map(client)) }
      }

      // A graceful stop of api-1, the clients running until 500 ms after it exited.
      const stopping = { at: Number.POSITIVE_INFINITY }
      const first = streams('stream', stopping)
      // The instance to stop has its share of the traffic first, however slow the machine: a fixed wait gave it only
      // five requests on a loaded one.
      await eventually(() => first.replies.filter((reply) => loggedIds(api1).has(reply.id)).length > 5, 'api-1 serving before its stop')
      expect(await api1.stop('SIGTERM')).toBe(0)
      const exitedAt = performance.now()
      stopping.at = exitedAt + 500
      await first.done
      expect(first.replies.filter((reply) => reply.status !== 200)).toEqual([])
      // The stopped instance had its share of the traffic until it stopped; the other one took all of it after.
      const [one] = await servedBy(first.replies.map((reply) => reply.id))
      expect(one.length).toBeGreaterThan(5)
      expect(first.replies.filter((reply) => reply.at > exitedAt).length).toBeGreaterThan(10)

      // A rolling restart: api-1 back on its port, and api-2 stopped the moment api-1 is ready, when nginx may
      // still leave api-1 out for the connections it refused while it was down.
      const rolling = { at: Number.POSITIVE_INFINITY }
      const second = streams('rolling', rolling)
      api1 = startServerProcess({ ...instance, PORT: new URL(api1Url).port }, ['serve', '--role', 'api'])
      await api1.waitFor(/listening on/)
      await eventually(async () => (await call(`${api1Url}/health/ready`).catch(() => null))?.status === 200, 'api-1 ready again')
      expect(await api2.stop('SIGTERM')).toBe(0)
      rolling.at = performance.now() + 500
      await second.done
      expect(second.replies.filter((reply) => reply.status !== 200)).toEqual([])
      expect(second.replies.length).toBeGreaterThan(50)

      expect(await api1.stop('SIGTERM')).toBe(0)
      const unavailable = await call(`${publicUrl}/v2/data-structures`, { key: keys[0] })
      expect(unavailable.status).toBe(503)
      expect(unavailable.body).toEqual({ message: expect.any(String), type: 'ServiceUnavailableError' })
      expect(unavailable.headers['x-request-id']).toMatch(/^[0-9a-f]{32}$/)
      // Three stops, each drained for SHUTDOWN_DRAIN_MS at most, under load.
    }, 75_000)
  },
)

describe.skipIf(NGINX === null)(
  `deploy/nginx.conf in a real nginx, in front of instances that never accept a connection${NGINX ? '' : ' (NOT RUN: nginx is not installed)'}`,
  () => {
    it('answers a request it could not send to any instance 503, which a client sends again, not the 504 of one that may have been done', async () => {
      // A listener that never accepts, its queue full: a connection to it is neither made nor refused, it times out.
      // It blocks for 15 s at most, then ends, whatever becomes of this test.
      const script = `const server = require('node:net').createServer(); server.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => { require('node:fs').writeSync(1, server.address().port + '\\n'); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 15000); process.exit(0) })`
      const stalled = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'ignore'] })
      const dir = tempDataDir()
      chmodSync(dir, 0o755)
      const args = ['-p', `${dir}/`, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')]
      let nginx: ChildProcess | null = null
      const fillers: Socket[] = []
      // Run even when the test times out, which a finally would not be.
      onTestFinished(async () => {
        for (const filler of fillers) filler.destroy()
        if (nginx && nginx.exitCode === null) {
          nginx.kill('SIGTERM')
          await once(nginx, 'exit')
        }
        stalled.kill('SIGKILL')
      })
      const printed = once(stalled.stdout, 'data') as Promise<[Buffer]>
      const [line] = await Promise.race([printed, once(stalled, 'exit').then(() => Promise.reject(new Error('the listener ended')))])
      const port = Number(line.toString().trim())
      // Connections fill its queue until one is not made (still connecting once a turn of the loop has passed).
      for (let made = true; made;) {
        const filler = connect(port, '127.0.0.1').on('error', () => undefined)
        fillers.push(filler)
        await Promise.race([once(filler, 'connect'), new Promise((resolve) => setTimeout(resolve, 500))])
        await new Promise((resolve) => setImmediate(resolve))
        made = !filler.connecting
      }
      const ports = { api1: port, api2: port, public: await freePort(), operator: await freePort() }
      writeFileSync(join(dir, 'nginx.conf'), nginxConfiguration(dir, ports))
      nginx = spawn(NGINX!, args, { stdio: 'ignore' })
      const publicUrl = `http://127.0.0.1:${ports.public}`
      // nginx answers this page itself, without an instance: it is up once it does.
      await eventually(
        async () => (await call(`${publicUrl}/admin`).catch(() => null))?.status === 404 || nginx!.exitCode !== null,
        'nginx up',
      )
      expect(nginx.exitCode, readFileSync(join(dir, 'error.log'), 'utf8')).toBeNull()
      const reply = await call(`${publicUrl}/v1/tables/deals/records/bulk`, {
        method: 'POST',
        key: 'cak_a-key-no-instance-reads-ever',
        body: [],
      })
      expect(reply.status).toBe(503)
      expect(reply.body).toEqual({ message: 'No instance of the service answered: retry later', type: 'ServiceUnavailableError' })
      expect(readFileSync(join(dir, 'error.log'), 'utf8')).toMatch(/upstream timed out .* while connecting to upstream/)
    })
  },
)
