import { EventEmitter } from 'node:events'
import { readFileSync } from 'node:fs'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ManualClock } from '../src/clock.ts'
import { ServiceMetrics } from '../src/observability/metrics.ts'
import type { DataImport } from '../src/store/model.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { sample } from './helpers/operations.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'

describe('GET /metrics', () => {
  let server: TestServer

  afterEach(() => server.close())

  it('serves Prometheus text without a key: requests by route and status, latency, 429s', async () => {
    server = await startTestServer({ RATE_LIMIT_PER_SECOND: '2' })
    const { apiKey } = await server.load(smallFixture())
    for (let index = 0; index < 3; index++) await server.call('/v2/data-structures', { key: apiKey })
    await server.call('/v2/data-structures/0123456789abcdef01234567/fields', { key: 'cak_wrong' })
    await server.call('/no/such/route')

    const reply = await server.call('/metrics')
    expect(reply.status).toBe(200)
    expect(reply.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8')
    const text = reply.text
    expect(sample(text, 'commission_api_http_requests_total{method="GET",route="/v2/data-structures",status_code="200"}')).toBe(2)
    expect(sample(text, 'commission_api_http_requests_total{method="GET",route="/v2/data-structures",status_code="429"}')).toBe(1)
    // Route templates, never raw URLs: an id does not make a series of its own.
    expect(
      sample(text, 'commission_api_http_requests_total{method="GET",route="/v2/data-structures/:table_id/fields",status_code="401"}'),
    ).toBe(1)
    expect(text).not.toContain('0123456789abcdef01234567')
    expect(sample(text, 'commission_api_http_requests_total{method="GET",route="unmatched",status_code="404"}')).toBe(1)
    expect(
      sample(text, 'commission_api_http_request_duration_seconds_count{method="GET",route="/v2/data-structures",status_code="200"}'),
    ).toBe(2)
    expect(
      sample(
        text,
        'commission_api_http_request_duration_seconds_bucket{le="+Inf",method="GET",route="/v2/data-structures",status_code="200"}',
      ),
    ).toBe(2)
    expect(sample(text, 'commission_api_rate_limited_total')).toBe(1)
  })

  it('reports imports by state and the queue depth from the store', async () => {
    server = await startTestServer()
    const { apiKey } = await server.load(smallFixture())
    const before = (await server.call('/metrics')).text
    expect(sample(before, 'commission_api_imports{state="scheduled"}')).toBe(0)
    expect(sample(before, 'commission_api_import_queue_depth')).toBe(0)

    // The test server runs no worker: the import waits in `scheduled`.
    const upsert = await server.call('/v1/users/bulk', {
      method: 'PUT',
      key: apiKey,
      body: { data: [{ email: 'new@acme.example', name: 'New' }] },
    })
    expect(upsert.status).toBe(200)
    const after = (await server.call('/metrics')).text
    expect(sample(after, 'commission_api_imports{state="scheduled"}')).toBe(1)
    expect(sample(after, 'commission_api_imports{state="started"}')).toBe(0)
    expect(sample(after, 'commission_api_import_queue_depth')).toBe(1)
  })

  it('reports how long the oldest due import has waited, not counting its debounce window', async () => {
    server = await startTestServer()
    const { apiKey } = await server.load(smallFixture())
    const age = async () => sample((await server.call('/metrics')).text, 'commission_api_import_oldest_scheduled_age_seconds')
    expect(await age()).toBe(0)

    // Held open for 600 s: the import cannot run yet, so it has not waited.
    const body = { data: [{ email: 'new@acme.example', name: 'New' }] }
    expect((await server.call('/v1/users/bulk?debounce=600', { method: 'PUT', key: apiKey, body })).status).toBe(200)
    server.clock.advance(599_000)
    expect(await age()).toBe(0)
    server.clock.advance(91_000)
    expect(await age()).toBe(90)

    // An import due at once, enqueued now, does not lower the age: the oldest one is reported.
    expect((await server.call('/v1/tables/deals/records/bulk', { method: 'POST', key: apiKey, body: [] })).status).toBe(200)
    expect(await age()).toBe(90)
  })

  it('answers a scrape while the store does not, its gauges of the store NaN and every other metric as ever', async () => {
    server = await startTestServer()
    await server.call('/health/live')
    await server.store.close()
    const reply = await server.call('/metrics')
    expect(reply.status).toBe(200)
    for (const series of [
      'commission_api_imports{state="scheduled"}',
      'commission_api_imports{state="started"}',
      'commission_api_import_queue_depth',
      'commission_api_import_oldest_scheduled_age_seconds',
    ]) {
      expect(sample(reply.text, series), series).toBeNaN()
    }
    expect(sample(reply.text, 'commission_api_http_requests_total{method="GET",route="/health/live",status_code="200"}')).toBe(1)
    expect(sample(reply.text, 'process_resident_memory_bytes')).toBeGreaterThan(0)
  })

  it('is documented in the OpenAPI document as text/plain; version=0.0.4', async () => {
    server = await startTestServer()
    const document = (await server.call('/openapi.json')).body
    expect(Object.keys(document.paths['/metrics'].get.responses[200].content)).toEqual(['text/plain; version=0.0.4; charset=utf-8'])
  })

  it("includes prom-client's default process and Node.js metrics", async () => {
    server = await startTestServer()
    const text = (await server.call('/metrics')).text
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'process_start_time_seconds',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_seconds',
      'nodejs_active_handles_total',
    ]) {
      expect(sample(text, name), name).toBeGreaterThanOrEqual(0)
    }
    expect(text).toContain(`nodejs_version_info{version="${process.version}"`)
    expect(text).toContain('# TYPE nodejs_gc_duration_seconds histogram')
  })

  it('says the version and the store kind in commission_api_build_info', async () => {
    server = await startTestServer()
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
    const store = process.env.MONGODB_URL ? 'mongodb' : 'sqlite'
    expect(server.store.kind).toBe(store)
    const text = (await server.call('/metrics')).text
    expect(sample(text, `commission_api_build_info{version="${version}",store="${store}"}`)).toBe(1)
    expect(text.split('\n').filter((line) => line.startsWith('commission_api_build_info{'))).toHaveLength(1)
  })

  it('counts the documentation page and all its assets under one route label', async () => {
    server = await startTestServer()
    for (const path of ['/docs', '/docs/static/swagger-ui.css', '/docs/static/swagger-ui-bundle.js', '/docs/json']) {
      await server.call(path)
    }
    const text = (await server.call('/metrics')).text
    expect(sample(text, 'commission_api_http_requests_total{method="GET",route="/docs/*",status_code="200"}')).toBe(4)
    expect(text).not.toMatch(/route="\/docs\/(static|json)/)
  })
})

const done = (launched: string, finished: string, error: boolean) => ({ launched_at: launched, finished_at: finished, error }) as DataImport

describe('import duration', () => {
  it('times every import the worker finishes, by outcome', async () => {
    const metrics = new ServiceMetrics({
      imports: { countUnfinished: async () => ({ scheduled: 0, started: 0 }), oldestScheduledDueAt: async () => null },
      clock: new ManualClock(),
      build: { version: '0.0.0', store: 'sqlite' },
    })
    const worker = new EventEmitter<{ finished: [DataImport] }>()
    metrics.watchWorker(worker)
    worker.emit('finished', done('2026-06-01T00:00:00.000Z', '2026-06-01T00:00:02.000Z', false))
    worker.emit('finished', done('2026-06-01T00:00:00.000Z', '2026-06-01T00:00:00.300Z', true))
    const text = await metrics.registry.metrics()
    expect(sample(text, 'commission_api_import_duration_seconds_count{outcome="ok"}')).toBe(1)
    expect(sample(text, 'commission_api_import_duration_seconds_sum{outcome="ok"}')).toBe(2)
    expect(sample(text, 'commission_api_import_duration_seconds_bucket{le="1",outcome="ok"}')).toBe(0)
    expect(sample(text, 'commission_api_import_duration_seconds_bucket{le="0.5",outcome="error"}')).toBe(1)
  })
})

/** A store read that never answers. */
const never = () => new Promise<never>(() => {})

describe('a scrape while the store hangs (MongoDB out of reach: its driver waits 30 s to select a server)', () => {
  it('gives the store up after 2 s, as readiness does, and answers with its gauges NaN', async () => {
    vi.useFakeTimers()
    try {
      const metrics = new ServiceMetrics({
        imports: { countUnfinished: never, oldestScheduledDueAt: never },
        clock: new ManualClock(),
        build: { version: '0.0.0', store: 'mongodb' },
      })
      const scrape = metrics.exposition()
      await vi.advanceTimersByTimeAsync(2000)
      const text = await scrape
      expect(sample(text, 'commission_api_import_queue_depth')).toBeNaN()
      expect(sample(text, 'commission_api_import_oldest_scheduled_age_seconds')).toBeNaN()
      expect(sample(text, 'commission_api_build_info{version="0.0.0",store="mongodb"}')).toBe(1)
    } finally {
      vi.useRealTimers()
    }
  })
})
