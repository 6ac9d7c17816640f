import { renameSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { buildApp } from '../src/app.ts'
import { ManualClock } from '../src/clock.ts'
import { loadConfig } from '../src/config.ts'
import { startServerProcess, tempDataDir } from './helpers/process.ts'
import { openTestStore } from './helpers/test-store.ts'
import { call, startTestServer, type TestServer } from './helpers/server.ts'

describe('health probes', () => {
  let server: TestServer

  afterEach(() => server.close())

  it('GET /health/live answers 200 without a key', async () => {
    server = await startTestServer()
    const reply = await server.call('/health/live')
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({ status: 'ok' })
    expect(reply.headers['x-request-id']).toEqual(expect.any(String))
  })

  it('GET /health/ready answers 200 while the store answers; without a worker in this instance it says so', async () => {
    server = await startTestServer()
    const reply = await server.call('/health/ready')
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({ status: 'ready', checks: { store: 'ok', worker: 'none', shutting_down: false } })
  })

  it('turns 503 while the store is unreachable, and live stays 200', async () => {
    server = await startTestServer()
    await server.store.close()
    const reply = await server.call('/health/ready', { headers: { 'x-request-id': 'probe-store-down' } })
    expect(reply.status).toBe(503)
    expect(reply.body).toEqual({ status: 'unavailable', checks: { store: 'unreachable', worker: 'none', shutting_down: false } })
    expect((await server.call('/health/live')).status).toBe(200)
    // The warning of that probe carries its request id, like every log line of a request.
    expect(server.logs.filter((line) => line.request_id === 'probe-store-down').map((line) => line.msg)).toEqual([
      'readiness: the store does not answer',
      'request',
    ])
  })

  it('answers at /healthz and /readyz as at /health/live and /health/ready, 503 included', async () => {
    server = await startTestServer()
    const live = await server.call('/healthz')
    expect(live.status).toBe(200)
    expect(live.body).toEqual({ status: 'ok' })
    const ready = await server.call('/readyz')
    expect(ready.status).toBe(200)
    expect(ready.body).toEqual({ status: 'ready', checks: { store: 'ok', worker: 'none', shutting_down: false } })

    await server.store.close()
    const unavailable = await server.call('/readyz')
    expect(unavailable.status).toBe(503)
    expect(unavailable.body).toEqual((await server.call('/health/ready')).body)
    expect(unavailable.body.checks.store).toBe('unreachable')
    expect((await server.call('/healthz')).status).toBe(200)
  })

  it('ignores a key: a wrong one does not make a probe fail', async () => {
    server = await startTestServer()
    expect((await server.call('/health/ready', { key: 'cak_wrong' })).status).toBe(200)
  })
})

describe('readiness with an import worker in the instance', () => {
  it('turns 503 when the worker has stopped', async () => {
    const { store, dispose } = await openTestStore()
    let running = true
    const config = loadConfig({ DEMO: 'off', LOG_LEVEL: 'silent' })
    const app = await buildApp({ config, store, clock: new ManualClock(), worker: { isRunning: () => running } })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const address = app.server.address()
    const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
    try {
      const alive = await call(`${url}/health/ready`)
      expect(alive.status).toBe(200)
      expect(alive.body.checks.worker).toBe('ok')
      running = false
      const stopped = await call(`${url}/health/ready`)
      expect(stopped.status).toBe(503)
      expect(stopped.body).toEqual({ status: 'unavailable', checks: { store: 'ok', worker: 'stopped', shutting_down: false } })
    } finally {
      await app.close()
      await dispose()
    }
  })
})

describe('a server whose SQLite file is removed or replaced under it', () => {
  it('answers its writes 503 rather than 200 into a file no name leads to, turns unready, and reads on', async () => {
    for (const change of ['removed', 'replaced'] as const) {
      const dataDir = tempDataDir()
      const file = join(dataDir, 'commission-api.sqlite')
      const server = startServerProcess({ DATA_DIR: dataDir, IMPORT_POLL_MS: '50' })
      try {
        const [, url] = await server.waitFor(/listening on (http:\/\/\S+)/)
        const [, key] = await server.waitFor(/curl -H "X-API-Key: (\S+)"/)
        expect((await call(`${url}/health/ready`)).status).toBe(200)

        if (change === 'removed') rmSync(file)
        else {
          new DatabaseSync(`${file}.new`).close()
          renameSync(`${file}.new`, file)
        }

        const body = { data: [{ email: 'lost@acme.example', name: 'Lost' }] }
        const refused = await call(`${url}/v1/users/bulk`, { method: 'PUT', key, body })
        expect(refused.status, change).toBe(503)
        expect(refused.body).toEqual({ message: expect.any(String), type: 'ServiceUnavailableError' })
        const ready = await call(`${url}/health/ready`)
        expect(ready.status, change).toBe(503)
        expect(ready.body.checks).toEqual({ store: 'unreachable', worker: 'ok', shutting_down: false })
        expect((await call(`${url}/health/live`)).status).toBe(200)
        expect((await call(`${url}/v2/data-structures`, { key })).status).toBe(200)
        // The worker, polling every 50 ms, says it once.
        await sleep(500)
        expect(server.output().match(/import worker: the store is busy or out of reach/g), change).toHaveLength(1)
      } finally {
        await server.stop()
      }
    }
  })
})
