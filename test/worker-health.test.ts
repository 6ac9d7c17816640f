import { once } from 'node:events'
import { describe, expect, it } from 'vitest'
import { smallFixture } from './helpers/fixtures.ts'
import { finishedImport, sample } from './helpers/operations.ts'
import { runCli, startServerProcess, tempDataDir } from './helpers/process.ts'
import { exchange, openConnection, refusesConnections } from './helpers/raw-http.ts'
import { call } from './helpers/server.ts'

describe('serve --role worker with WORKER_HEALTH_PORT', () => {
  it('serves the probes and the metrics of the worker, and nothing else', async () => {
    const dataDir = tempDataDir()
    const loaded = runCli(['load', '-', '--json'], { DATA_DIR: dataDir }, JSON.stringify(smallFixture()))
    expect(loaded.code, loaded.stderr).toBe(0)
    const { api_key: key } = JSON.parse(loaded.stdout) as { api_key: string }

    const worker = startServerProcess({ DATA_DIR: dataDir, WORKER_HEALTH_PORT: '0', IMPORT_POLL_MS: '20' }, ['serve', '--role', 'worker'])
    const api = startServerProcess({ DATA_DIR: dataDir, DEMO: 'off' }, ['serve', '--role', 'api'])
    try {
      const [, health] = await worker.waitFor(/worker health and metrics on (http:\/\/\S+)/)
      const [, apiUrl] = await api.waitFor(/listening on (http:\/\/\S+)/)

      for (const path of ['/health/ready', '/readyz']) {
        const ready = await call(`${health}${path}`)
        expect(ready.status).toBe(200)
        expect(ready.body).toEqual({ status: 'ready', checks: { store: 'ok', worker: 'ok', shutting_down: false } })
      }
      for (const path of ['/health/live', '/healthz']) expect((await call(`${health}${path}`)).body).toEqual({ status: 'ok' })
      const other = await call(`${health}/v2/data-structures`, { key })
      expect(other.status).toBe(404)
      expect(other.body.type).toBe('NotFoundError')

      // An import enqueued by the API instance is applied by this worker, which times it.
      const upsert = await call(`${apiUrl}/v1/users/bulk`, {
        method: 'PUT',
        key,
        body: { data: [{ email: 'new@acme.example', name: 'New' }] },
      })
      expect(upsert.status).toBe(200)
      await finishedImport(apiUrl, key, upsert.body.import_id)
      const metrics = await call(`${health}/metrics`)
      expect(metrics.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8')
      expect(sample(metrics.text, 'commission_api_import_duration_seconds_count{outcome="ok"}')).toBe(1)
      expect(sample(metrics.text, 'commission_api_imports{state="started"}')).toBe(0)
      expect(sample(metrics.text, 'commission_api_import_queue_depth')).toBe(0)
      expect(sample(metrics.text, 'process_resident_memory_bytes')).toBeGreaterThan(0)
      expect(metrics.text).toMatch(/^commission_api_build_info\{version="[^"]+",store="(sqlite|mongodb)"\} 1$/m)
    } finally {
      expect(await api.stop()).toBe(0)
      expect(await worker.stop()).toBe(0)
    }
  })

  it("tells the controlled clock's time in its Date header, as it moves, its refusals of malformed HTTP included", async () => {
    const env = { DATA_DIR: tempDataDir(), CLOCK: 'controlled' }
    const worker = startServerProcess({ ...env, WORKER_HEALTH_PORT: '0' }, ['serve', '--role', 'worker'])
    try {
      const [, health] = await worker.waitFor(/worker health and metrics on (http:\/\/\S+)/)
      const aheadBy = async () => Date.parse(String((await call(`${health}/health/live`)).headers.date)) - Date.now()
      expect(Math.abs(await aheadBy())).toBeLessThan(60_000)
      const tenDays = 10 * 86_400_000
      expect(runCli(['clock', 'advance', String(tenDays)], env).code).toBe(0)
      expect(await aheadBy()).toBeGreaterThan(tenDays - 60_000)

      // What the framework or Node would refuse on its own is refused as on an API instance (test/hostile-http.test.ts):
      // in the specification's bodies, at the service's time.
      const refusals: [string, number, string][] = [
        ['GARBAGE\r\n\r\n', 400, 'request'],
        [`GET /health/live HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'headers'],
        ['GET /health/%zz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n', 400, 'path'],
        ['GET /health/live HTTP/1.1\r\nConnection: close\r\n\r\n', 400, 'Host'],
        ['GET /health/live HTTP/1.1\r\nHost: localhost\r\nExpect: later\r\nConnection: close\r\n\r\n', 417, 'Expect'],
      ]
      for (const [bytes, status, resource] of refusals) {
        const [head, body] = (await exchange(health, bytes)).split('\r\n\r\n')
        expect(head, resource).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `))
        expect(JSON.parse(body), resource).toEqual({
          count: 1,
          errors: [{ error: 'ValidationError', resource, description: expect.any(String) }],
        })
        const date = /\r\ndate: ([^\r]*)/i.exec(head)?.[1] ?? ''
        expect(Date.parse(date) - Date.now(), resource).toBeGreaterThan(tenDays - 60_000)
      }
      const tunnel = await exchange(health, 'CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n')
      expect(tunnel).toMatch(/^HTTP\/1\.1 405 /)
      // Its own methods: a probe port serves reads only.
      expect(tunnel).toMatch(/\r\nAllow: GET, HEAD\r\n/)
    } finally {
      expect(await worker.stop()).toBe(0)
    }
  })

  it('answers a probe that reaches it while it stops in its own 503 body, and stops without a warning', async () => {
    const worker = startServerProcess({ DATA_DIR: tempDataDir(), WORKER_HEALTH_PORT: '0' }, ['serve', '--role', 'worker'])
    const [, health] = await worker.waitFor(/worker health and metrics on (http:\/\/\S+)/)
    const port = Number(new URL(health).port)
    // A probe whose headers are not all sent yet: the connection is busy, so the stop waits for it.
    const connection = await openConnection(port)
    connection.socket.write('GET /health/ready HTTP/1.1\r\nHost: localhost\r\n')
    worker.child.kill('SIGTERM')
    await refusesConnections(port)
    connection.socket.write('\r\n')
    await once(connection.socket, 'close')
    const answer = connection.received()
    expect(answer).toMatch(/^HTTP\/1\.1 503 /)
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({
      status: 'unavailable',
      checks: { shutting_down: true },
    })
    expect(await worker.stop()).toBe(0)
    expect(worker.errors()).not.toMatch(/Deprecation|FSTDEP/)
  })

  it('serves no HTTP without it', async () => {
    const dataDir = tempDataDir()
    const loaded = runCli(['load', '-', '--json'], { DATA_DIR: dataDir }, JSON.stringify(smallFixture()))
    const { api_key: key } = JSON.parse(loaded.stdout) as { api_key: string }
    const worker = startServerProcess({ DATA_DIR: dataDir, IMPORT_POLL_MS: '20' }, ['serve', '--role', 'worker'])
    const api = startServerProcess({ DATA_DIR: dataDir, DEMO: 'off' }, ['serve', '--role', 'api'])
    try {
      const [, apiUrl] = await api.waitFor(/listening on (http:\/\/\S+)/)
      // Once the worker has applied an import, it has long been running: it would have said where it listens.
      const upsert = await call(`${apiUrl}/v1/users/bulk`, { method: 'PUT', key, body: { data: [{ email: 'new@acme.example' }] } })
      await finishedImport(apiUrl, key, upsert.body.import_id)
      expect(worker.output()).toMatch(/import worker \S+ started/)
      expect(worker.output()).not.toContain('health and metrics on')
    } finally {
      expect(await api.stop()).toBe(0)
      expect(await worker.stop()).toBe(0)
    }
  })
})

describe("the worker's health port, against a client sending slowly", () => {
  it('answers 408 once REQUEST_TIMEOUT_MS has passed and closes the connection, as an API instance does', async () => {
    const dataDir = tempDataDir()
    const worker = startServerProcess({ DATA_DIR: dataDir, WORKER_HEALTH_PORT: '0', REQUEST_TIMEOUT_MS: '1000' }, [
      'serve',
      '--role',
      'worker',
    ])
    try {
      const [, health] = await worker.waitFor(/worker health and metrics on (http:\/\/\S+)/)
      const connection = await openConnection(Number(new URL(health).port))
      // Headers that never end.
      connection.socket.write('GET /health/live HTTP/1.1\r\nHost: localhost\r\n')
      await once(connection.socket, 'close')
      expect(connection.received()).toMatch(/^HTTP\/1\.1 408 /)
    } finally {
      expect(await worker.stop()).toBe(0)
    }
  })
})
