import { request } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { CommissionClient } from '../src/client/index.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { KIT_DEMO_KEY, type KitServer, startKitServer } from './helpers/kit-server.ts'
import { exchange, statusesIn } from './helpers/raw-http.ts'
import type { Reply } from './helpers/server.ts'

/** Fault scenarios (`/admin/companies/{id}/faults`) over HTTP: what each does, when it fires, what it never touches. */

let server: KitServer
afterEach(() => server?.close())

const faults = () => `/admin/companies/${server.demoId}/faults`
const setFault = (body: Record<string, unknown>, companyId = server.demoId) =>
  server.admin(`/admin/companies/${companyId}/faults`, { method: 'POST', body })

describe('faults', () => {
  it('answers a status on the next N matching requests only, and counts each firing', async () => {
    server = await startKitServer()
    const structures = (await server.api('/v2/data-structures')).body.data
    const statements = structures.find((structure: { type: string }) => structure.type === 'statement_reporting').id
    const created = await setFault({ method: 'get', path: '/v2/reporting/*/statements', status: 503, times: 2 })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({
      method: 'GET',
      path: '/v2/reporting/*/statements',
      status: 503,
      times: 2,
      fired: 0,
      drop: false,
      delay_ms: null,
    })

    const first = await server.api(`/v2/reporting/${statements}/statements?limit=1`)
    expect(first.status).toBe(503)
    expect(first.body).toEqual({ message: expect.stringContaining(created.body.id), type: 'ServiceUnavailableError' })
    // Another path, another method, and the same path once the fault has fired its two times: not touched.
    expect((await server.api('/v2/data-structures')).status).toBe(200)
    expect((await server.api(`/v2/reporting/${statements}/statements?limit=1`)).status).toBe(503)
    expect((await server.api(`/v2/reporting/${statements}/statements?limit=1`)).status).toBe(200)
    expect((await server.admin(faults())).body).toEqual({ count: 1, data: [{ ...created.body, fired: 2 }] })

    const metrics = (await server.call('/metrics')).text
    expect(metrics).toMatch(/commission_api_faults_fired_total\{effect="503"\} 2/)

    // A 503 may say when to try again, as the service's own do (a busy store: Retry-After: 1); without it, it does not.
    const later = await setFault({ method: 'GET', path: '/v2/data-structures', status: 503, retry_after: 30, times: 1 })
    expect(later.body).toMatchObject({ status: 503, retry_after: 30 })
    const answered = await server.api('/v2/data-structures')
    expect(answered.status).toBe(503)
    expect(answered.headers['retry-after']).toBe('30')
    expect(first.headers['retry-after']).toBeUndefined()
  })

  it('lets the first `skip` matching requests through before it fires', async () => {
    server = await startKitServer()
    const fault = await setFault({ method: 'GET', path: '/v1/users', status: 503, skip: 2, times: 1 })
    expect(fault.body).toMatchObject({ skip: 2, times: 1 })
    const statuses = []
    for (let call = 0; call < 4; call++) statuses.push((await server.api('/v1/users?limit=1')).status)
    expect(statuses).toEqual([200, 200, 503, 200])
    expect((await server.admin(faults())).body.data[0]).toMatchObject({ fired: 1, skip: 2 })
  })

  it('matches only requests whose query has the parameters it names, as the route reads them', async () => {
    server = await startKitServer()
    const fault = await setFault({ method: 'GET', path: '/v1/users', query: { offset: '2', email: 'a+b@x.example' }, status: 503 })
    expect(fault.body).toMatchObject({ query: { offset: '2', email: 'a+b@x.example' } })
    const statusOf = async (query: string) => (await server.api(`/v1/users?${query}`)).status
    expect(await statusOf('limit=1&offset=2&email=a%2Bb%40x.example')).toBe(503)
    expect(await statusOf('offset=1&offset=2&email=a%2Bb@x.example')).toBe(503)
    expect(await statusOf('offset=2')).toBe(200)
    expect(await statusOf('offset=3&email=a%2Bb%40x.example')).toBe(200)
    expect(await statusOf('offset=2&email=a+b@x.example')).toBe(200)
    expect((await setFault({ method: 'GET', path: '/v1/users', status: 503 })).body).toMatchObject({ query: null })
  })

  it('answers each status with the body the specification gives it; 429 with Retry-After and the rate-limit headers', async () => {
    server = await startKitServer()
    const bodies: Record<number, unknown> = {
      400: { count: 1, errors: [{ error: 'ValidationError', resource: 'request', description: expect.any(String) }] },
      401: { message: expect.any(String), type: 'UnauthorizedError' },
      403: { message: expect.any(String), type: 'ForbiddenError', error: 'ForbiddenError' },
      404: { message: expect.any(String), resource: 'route', type: 'NotFoundError' },
      429: { message: expect.any(String), type: 'TooManyRequestsError' },
      500: { message: 'Internal server error', type: 'InternalServerError' },
      503: { message: expect.any(String), type: 'ServiceUnavailableError' },
    }
    const answers: Record<string, Reply> = {}
    for (const [status, body] of Object.entries(bodies)) {
      await setFault({
        method: 'PUT',
        path: '/v1/users/bulk',
        status: Number(status),
        times: 1,
        ...(status === '429' ? { retry_after: 7 } : {}),
      })
      answers[status] = await server.api('/v1/users/bulk', { method: 'PUT', body: { data: [{ email: 'faulted@demo.example' }] } })
      expect(answers[status].status, status).toBe(Number(status))
      expect(answers[status].body, status).toEqual(body)
    }
    expect(answers['429'].headers).toMatchObject({
      'retry-after': '7',
      'ratelimit-limit': '80',
      'ratelimit-remaining': '0',
      'ratelimit-reset': '7',
    })
    // None of the faulted upserts was taken: nothing was stored.
    expect((await server.admin(`/admin/companies/${server.demoId}/imports`)).body.count).toBe(0)
    const metrics = (await server.call('/metrics')).text
    // An injected 429 is the fault's, not the rate limit's.
    expect(metrics).toMatch(/commission_api_faults_fired_total\{effect="429"\} 1/)
    expect(metrics).toMatch(/commission_api_rate_limited_total 0/)
  })

  it('lets a client that waits out Retry-After get through after injected 429s', async () => {
    server = await startKitServer()
    await setFault({ method: 'GET', path: '/v2/data-structures', status: 429, times: 2, retry_after: 1 })
    const client = new CommissionClient({ baseUrl: server.url, apiKey: server.running.app.config.demoApiKey! })
    const started = Date.now()
    const { data } = await client.listDataStructures()
    const waited = Date.now() - started
    await client.close()
    expect(data.length).toBeGreaterThan(0)
    // It waited the second each 429 asked for, twice, before the third request went through.
    expect(waited).toBeGreaterThanOrEqual(2000)
    const journal = (await server.admin(`/admin/companies/${server.demoId}/requests?path_prefix=/v2/data-structures`)).body.data
    expect(journal.map((entry: { status: number }) => entry.status)).toEqual([200, 429, 429])
    expect(Date.parse(journal[0].at) - Date.parse(journal[1].at)).toBeGreaterThanOrEqual(900)
  })

  it('waits a fixed delay, or one drawn up to delay_max_ms, before answering as usual', async () => {
    server = await startKitServer()
    await setFault({ method: 'GET', path: '/v1/users', delay_ms: 300, times: 1 })
    let started = Date.now()
    expect((await server.api('/v1/users?limit=1')).status).toBe(200)
    expect(Date.now() - started).toBeGreaterThanOrEqual(300)

    await setFault({ method: 'GET', path: '/v1/users', delay_ms: 100, delay_max_ms: 250, times: 3, seed: 7 })
    for (let index = 0; index < 3; index++) {
      started = Date.now()
      expect((await server.api('/v1/users?limit=1')).status).toBe(200)
      expect(Date.now() - started).toBeGreaterThanOrEqual(100)
    }
    const journal = (await server.admin(`/admin/companies/${server.demoId}/requests`)).body.data
    for (const entry of journal) expect(entry.duration_ms).toBeGreaterThanOrEqual(100)
    expect((await server.call('/metrics')).text).toMatch(/commission_api_faults_fired_total\{effect="delay"\} 4/)
  })

  it('drops the connection without an answer', async () => {
    server = await startKitServer()
    const fault = await setFault({ method: 'POST', path: '/v1/tables/*/records/bulk', drop: true })
    await expect(
      request(`${server.url}/v1/tables/deals/records/bulk`, {
        method: 'POST',
        headers: { 'x-api-key': server.running.app.config.demoApiKey!, 'content-type': 'application/json' },
        body: JSON.stringify([{ id: 'D-DROP' }]),
      }),
    ).rejects.toThrow(/other side closed|socket|ECONNRESET/i)
    const [entry] = (await server.admin(`/admin/companies/${server.demoId}/requests`)).body.data
    expect(entry).toMatchObject({
      method: 'POST',
      path: '/v1/tables/deals/records/bulk',
      status: null,
      fault_id: fault.body.id,
      import_id: null,
    })
    expect((await server.admin(`/admin/companies/${server.demoId}/imports`)).body.count).toBe(0)
  })

  it('serves a request and drops its answer: the write is done, and a PUT sent again under its request id is not done twice', async () => {
    server = await startKitServer()
    const fault = await setFault({ method: 'PUT', path: '/v1/users/bulk', drop_answer: true, times: 1 })
    expect(fault.body).toMatchObject({ drop: false, drop_answer: true })
    const put = () =>
      request(`${server.url}/v1/users/bulk`, {
        method: 'PUT',
        headers: { 'x-api-key': server.running.app.config.demoApiKey!, 'content-type': 'application/json', 'x-request-id': 'put-1' },
        body: JSON.stringify({ data: [{ email: 'lost-answer@demo.example' }] }),
      })
    await expect(put()).rejects.toThrow(/other side closed|socket|ECONNRESET/i)
    const [entry] = (await server.admin(`/admin/companies/${server.demoId}/requests`)).body.data
    expect(entry).toMatchObject({
      method: 'PUT',
      path: '/v1/users/bulk',
      status: null,
      fault_id: fault.body.id,
      import_id: expect.any(String),
    })
    const imports = (await server.admin(`/admin/companies/${server.demoId}/imports`)).body
    expect(imports.data.map((stored: { id: string }) => stored.id)).toEqual([entry.import_id])

    // The client sends it again, as after any failure it cannot tell the fate of: the same call, stored once.
    const again = await put()
    expect(again.statusCode).toBe(200)
    expect(((await again.body.json()) as { import_id: string }).import_id).toBe(entry.import_id)
    expect((await server.admin(`/admin/companies/${server.demoId}/imports`)).body.count).toBe(1)
    expect((await server.call('/metrics')).text).toMatch(/commission_api_faults_fired_total\{effect="drop_answer"\} 1/)
  })

  it('ends a delay under way when the instance stops, and serves its request, rather than hold the stop for it', async () => {
    server = await startKitServer()
    await setFault({ method: 'GET', path: '/v1/users', delay_ms: 600_000, times: 1 })
    const delayed = server.api('/v1/users?limit=1')
    while ((await server.admin(faults())).body.data[0].fired === 0) await new Promise((resolve) => setTimeout(resolve, 20))
    // Without the stop ending it, the request would wait its ten minutes, and the stop with it (past the test's time).
    const stopped = server.close()
    expect((await delayed).status).toBe(200)
    await stopped
  })

  it('does not serve a request its client gave up on during a delay, and keeps it in the journal with no status', async () => {
    server = await startKitServer()
    const fault = await setFault({ method: 'POST', path: '/v1/tables/*/records/bulk', delay_ms: 1_500 })
    const key = server.running.app.config.demoApiKey!
    await expect(
      request(`${server.url}/v1/tables/deals/records/bulk?limit=9`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify([{ id: 'D-GIVEN-UP' }]),
        signal: AbortSignal.timeout(200),
      }),
    ).rejects.toThrow(/abort|timeout/i)
    // The test goes on as a test suite does: it resets the company, then waits past the delay.
    expect((await server.admin(`/admin/companies/${server.demoId}/reset`, { method: 'POST' })).status).toBe(200)
    await new Promise((resolve) => setTimeout(resolve, 1_800))

    expect((await server.admin(`/admin/companies/${server.demoId}/imports`)).body.count).toBe(0)
    const records = (await server.api('/v1/tables/deals/records?limit=1000')).body.data.map((record: { id: string }) => record.id)
    expect(records).not.toContain('D-GIVEN-UP')
    // A company's reset keeps its journal: the request is there, never answered.
    const [entry] = (await server.admin(`/admin/companies/${server.demoId}/requests?method=POST`)).body.data
    expect(entry).toMatchObject({
      method: 'POST',
      path: '/v1/tables/deals/records/bulk',
      query: { limit: '9' },
      status: null,
      fault_id: fault.body.id,
      import_id: null,
    })
  })

  it('matches a path as the router reads it, its segments percent-decoded, on the pattern and on the request', async () => {
    server = await startKitServer()
    await setFault({ method: 'GET', path: '/v1/tables/deals/records', status: 503 })
    await setFault({ method: 'GET', path: '/v1/imports/caf%C3%A9', status: 500 })
    // `%64` is `d`: the same table, which the router serves as `deals`.
    expect((await server.api('/v1/tables/%64eals/records?limit=1')).status).toBe(503)
    expect((await server.api('/v1/tables/deals/records?limit=1')).status).toBe(503)
    expect((await server.api('/v1/imports/caf%C3%A9')).status).toBe(500)
    expect((await server.api('/v1/imports/caf%c3%a9')).status).toBe(500)
    expect((await server.api('/v1/imports/cafe')).status).toBe(404)
    // A target with a fragment, which no client library sends but the router serves, its path ending at the `#`.
    const withFragment = (method: string, target: string) =>
      exchange(server.url, `${method} ${target} HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${KIT_DEMO_KEY}\r\nConnection: close\r\n\r\n`)
    expect(statusesIn(await withFragment('GET', '/v1/tables/deals/records#page-2'))).toEqual([503])
    // Nor does the fragment hide a method the route does not take.
    expect(statusesIn(await withFragment('DELETE', '/v1/tables/deals/records#page-2'))).toEqual([405])
  })

  it('journals requests by their arrival: a delayed one at the time it arrived, after one that came later', async () => {
    server = await startKitServer()
    await setFault({ method: 'GET', path: '/v1/users', delay_ms: 600, times: 1 })
    const before = Date.parse((await server.admin('/admin/clock')).body.now)
    const delayed = server.api('/v1/users?limit=1')
    await new Promise((resolve) => setTimeout(resolve, 150))
    // While it is held, another worker of the suite moves the clock a day ahead and sends a request of its own.
    const moved = Date.parse((await server.admin('/admin/clock', { method: 'POST', body: { advance_ms: 86_400_000 } })).body.now)
    expect((await server.api('/v2/data-structures')).status).toBe(200)
    expect((await delayed).status).toBe(200)

    const [later, first] = (await server.admin(`/admin/companies/${server.demoId}/requests`)).body.data
    expect([later.path, first.path]).toEqual(['/v2/data-structures', '/v1/users'])
    // It arrived before the move: its time is not the answer's time less its duration, a day later.
    expect(Date.parse(first.at)).toBeGreaterThanOrEqual(before)
    expect(Date.parse(first.at)).toBeLessThan(moved - 86_400_000)
    expect(Date.parse(later.at)).toBeGreaterThanOrEqual(moved)
  })

  it('fires on a seeded share of the matching requests: the same seed, the same requests', async () => {
    server = await startKitServer()
    const other = await server.admin('/admin/companies', { method: 'POST', body: smallFixture('Other') })
    const pattern = async (companyId: string, key: string) => {
      await setFault({ method: 'GET', path: '/v1/users', status: 503, probability: 0.5, seed: 42 }, companyId)
      const statuses: number[] = []
      for (let index = 0; index < 20; index++) statuses.push((await server.call('/v1/users?limit=0', { key })).status)
      return statuses
    }
    const demo = await pattern(server.demoId, server.running.app.config.demoApiKey!)
    const again = await pattern(other.body.company_id, other.body.api_key)
    expect(again).toEqual(demo)
    const fired = demo.filter((status) => status === 503).length
    expect(fired).toBeGreaterThan(0)
    expect(fired).toBeLessThan(20)
    expect((await server.admin(faults())).body.data[0].fired).toBe(fired)
  })

  it("touches only its company's v1 and v2 requests: never admin, health, metrics or documentation routes", async () => {
    server = await startKitServer()
    const other = await server.admin('/admin/companies', { method: 'POST', body: smallFixture('Other') })
    expect((await setFault({ method: '*', path: '/*/*', status: 503 })).status).toBe(201)
    expect((await server.api('/v1/users')).status).toBe(503)
    expect((await server.call('/v1/users', { key: other.body.api_key })).status).toBe(200)
    for (const path of ['/health/live', '/health/ready', '/metrics', '/openapi.json'])
      expect((await server.call(path)).status, path).toBe(200)
    expect((await server.admin('/admin/clock')).status).toBe(200)
    expect((await server.admin(faults())).status).toBe(200)
    for (const path of ['/admin/clock', '/health/live', '/metrics', 'v1/users', '/v1/users?limit=1']) {
      const refused = await setFault({ method: 'GET', path, status: 503 })
      expect(refused.status, path).toBe(400)
      expect(refused.body.errors[0].resource, path).toBe('path')
    }
  })

  it('fires only on a request a route takes: a path that names no route, or a method its route does not take, is answered as without it', async () => {
    server = await startKitServer()
    const fault = await setFault({ method: '*', path: '/v1/*', status: 503 })
    expect((await server.api('/v1/nothing')).status).toBe(404)
    expect((await server.api('/v1/users', { method: 'DELETE' })).status).toBe(405)
    expect((await server.api('/v1/users?limit=0')).status).toBe(503)
    expect((await server.admin(faults())).body.data[0]).toMatchObject({ id: fault.body.id, fired: 1 })
  })

  it('refuses a fault it could not apply, and clears one fault or all of them', async () => {
    server = await startKitServer()
    const refusals: [Record<string, unknown>, string][] = [
      [{ method: 'GET', path: '/v1/users' }, 'status'],
      [{ method: 'GET', path: '/v1/users', status: 503, drop: true }, 'drop'],
      [{ method: 'GET', path: '/v1/users', status: 503, drop_answer: true }, 'drop_answer'],
      [{ method: 'GET', path: '/v1/users', drop: true, drop_answer: true }, 'drop_answer'],
      [{ method: 'GET', path: '/v1/users', delay_ms: 500, delay_max_ms: 100 }, 'delay_max_ms'],
      [{ method: 'GET', path: '/v1/users', status: 418 }, 'status'],
      [{ method: 'GET', path: '/v1/users', status: 500, retry_after: 5 }, 'retry_after'],
      // Paths no request could match: a parameter written as in the OpenAPI document, `**`, no such route or method.
      [{ method: 'GET', path: '/v2/reporting/{table_id}/statements', status: 503 }, 'path'],
      [{ method: 'GET', path: '/v2/reporting/**/statements', status: 503 }, 'path'],
      [{ method: 'GET', path: '/v1/nope', status: 503 }, 'path'],
      [{ method: '*', path: '/v2/reporting/*/statements/*', status: 503 }, 'path'],
      [{ method: 'PUT', path: '/v2/data-structures', status: 503 }, 'path'],
      [{ method: 'GET', path: '/v1/tables//records', status: 503 }, 'path'],
      // A parameter longer than the router reads: such a request is answered 414 before any fault.
      [{ method: 'GET', path: `/v1/tables/${'d'.repeat(101)}/records`, status: 503 }, 'path'],
      [{ method: 'FETCH', path: '/v1/users', status: 503 }, 'method'],
      [{ method: 'GET', path: '/v1/users', status: 503, probability: 0 }, 'probability'],
      [{ method: 'GET', path: '/v1/users', status: 503, skip: 0 }, 'skip'],
      [{ method: 'GET', path: '/v1/users', status: 503, colour: 'red' }, 'colour'],
    ]
    for (const [body, resource] of refusals) {
      const refused = await setFault(body)
      expect(refused.status, JSON.stringify(body)).toBe(400)
      expect(
        refused.body.errors.map((error: { resource: string }) => error.resource),
        JSON.stringify(body),
      ).toContain(resource)
    }
    // Paths that reach a route: a literal segment where the route has a parameter, percent-encoded, any method.
    const longest = `/v1/tables/${'%64'.repeat(100)}/records`
    for (const path of ['/v1/tables/deals/records/bulk', '/v1/tables/%64eals/records', '/*/users', '/v2/*/*/statements', longest]) {
      const reached = await setFault({ method: '*', path, status: 503 })
      expect(reached.status, `${path}: ${reached.text}`).toBe(201)
    }
    // The router reads a parameter's length percent-decoded: 100 characters, sent as 300, are taken.
    expect((await server.api(`${longest}?limit=1`)).status).toBe(503)
    expect((await server.admin(faults(), { method: 'DELETE' })).status).toBe(204)
    const one = await setFault({ method: 'GET', path: '/v1/users', status: 503 })
    const two = await setFault({ method: 'GET', path: '/v2/data-structures', status: 500 })
    expect((await server.admin(`${faults()}/${one.body.id}`, { method: 'DELETE' })).status).toBe(204)
    expect((await server.admin(`${faults()}/${one.body.id}`, { method: 'DELETE' })).body).toMatchObject({
      resource: 'fault',
      type: 'NotFoundError',
    })
    expect((await server.api('/v1/users?limit=0')).status).toBe(200)
    expect((await server.admin(faults())).body.data.map((fault: { id: string }) => fault.id)).toEqual([two.body.id])
    expect((await server.admin(faults(), { method: 'DELETE' })).status).toBe(204)
    expect((await server.admin(faults())).body).toEqual({ count: 0, data: [] })
    expect((await server.api('/v2/data-structures')).status).toBe(200)
    expect((await server.admin('/admin/companies/0123456789abcdef01234567/faults')).status).toBe(404)
  })
})
