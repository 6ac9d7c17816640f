import {
  type Amount,
  type AttributionReceipt,
  CommissionClient,
  ConnectionError,
  type DataStructure,
  DEFAULT_CLOCK_SKEW_MS,
  ForbiddenApiError,
  type GroupAttribution,
  ImportTimeoutError,
  type ManagerAttribution,
  NotFoundApiError,
  RateLimitedError,
  type StatementRow,
  UnauthorizedApiError,
  ValidationApiError,
} from 'commission-api/client'
import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { afterAll, beforeAll, describe, expect, expectTypeOf, it, vi } from 'vitest'
import { demoFixture } from '../src/fixtures/demo.ts'
import { retryAfterSeconds, statedLimit } from '../src/client/transport.ts'
import { ImportWorker } from '../src/imports/worker.ts'
import { collect, requestLines } from './helpers/client-support.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { startCuttingProxy } from './helpers/cutting-proxy.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'

const ADMIN_TOKEN = 'admin-token-for-the-client-tests'
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

const ids = (rows: Array<Record<string, unknown>>) => rows.map((row) => row['standard.id'] ?? row.id)

describe('the client, against our server over HTTP', () => {
  let server: TestServer
  let worker: ImportWorker
  let client: CommissionClient
  let companyId: string
  let apiKey: string
  let structures: DataStructure[]
  const byType = (type: DataStructure['type']) => structures.find((structure) => structure.type === type)!
  const setFault = async (fault: Record<string, unknown>) => {
    const reply = await server.call(`/admin/companies/${companyId}/faults`, { method: 'POST', headers: admin, body: fault })
    expect(reply.status, reply.text).toBe(201)
  }
  /** The statuses of the company's latest requests to `path`, the latest first. */
  const latestStatuses = async (path: string, count: number) => {
    const journal = await server.call(`/admin/companies/${companyId}/requests?path_prefix=${path}`, { headers: admin })
    return journal.body.data.slice(0, count).map((entry: { status: number }) => entry.status)
  }

  beforeAll(async () => {
    server = await startTestServer({ ADMIN_TOKEN, RATE_LIMIT_PER_SECOND: '1000000' }, {}, { runningClock: true })
    // Loaded an hour ago, so that the incremental reads below see only what the tests change.
    server.clock.advance(-3_600_000)
    ;({ companyId, apiKey } = await server.load(demoFixture({ users: 6, months: 3, deals: 20, seed: 'client' })))
    server.clock.set(new Date())
    worker = new ImportWorker({ store: server.store, clock: server.clock, pollMs: 20 })
    worker.start()
    client = new CommissionClient({ baseUrl: server.url, apiKey })
    structures = (await client.listDataStructures()).data
  })
  afterAll(async () => {
    await client.close()
    await worker.stop()
    await server.close()
  })

  it('walks every v2 page through next_url, the same rows as one large page, for each kind of structure', async () => {
    for (const type of ['statement_reporting', 'record_reporting', 'quota'] as const) {
      const structure = byType(type)
      const whole = await client.transport.send<any>({
        method: 'GET',
        path: new URL(structure.links.records).pathname,
        query: { limit: 2000 },
      })
      expect(whole.body.data.length, type).toBeGreaterThan(4)
      const pages = await collect(client.pages(structure, { limit: 4 }))
      expect(pages.length).toBe(Math.ceil(whole.body.data.length / 4))
      expect(pages.flatMap((page) => page.data)).toEqual(whole.body.data)
      expect(pages.at(-1)!.meta).toEqual({ next_start_id: null, has_more: false, next_url: null })
    }
    const statements = await collect(client.statements(byType('statement_reporting').id, { limit: 5 }))
    expect(statements[0]['standard.total_commission']).toEqual({ value: expect.any(Number), currency: expect.any(String) })
    const values = await collect(client.quotaValues(byType('quota').id, { limit: 3 }))
    expect(Object.keys(values[0]).toSorted()).toEqual([
      'standard.id',
      'standard.period',
      'standard.source',
      'standard.user',
      'standard.value',
    ])
  })

  it('walks every v1 list through offset: users, table records and both deprecated reads', async () => {
    const users = await collect(client.users({ limit: 2 }))
    const page = await client.listUsers()
    expect(users).toEqual(page.data)
    expect(users.length).toBe(page.count)

    const records = await collect(client.tableRecords('deals', { limit: 7 }))
    expect(records).toEqual((await client.listTableRecords('deals')).data)
    expect(records.length).toBe(20)

    const statements = await collect(client.reportingStatements({ limit: 5 }))
    expect(ids(statements)).toEqual(ids(await collect(client.statements(byType('statement_reporting').id))))

    const table = (await server.store.dataTables.list(companyId)).find((candidate) => candidate.environment === 'live')!
    const lines = await collect(client.reportingRecords(table.id, { limit: 6 }))
    expect(lines.length).toBe((await client.listReportingRecords(table.id, { limit: 0 })).count)
    expect(lines.length).toBe(await server.store.commissionLines.count(companyId, table.id))
  })

  it('reads the fields of a structure, and refuses an instant without an offset before sending it', async () => {
    const schema = await client.getFields(byType('quota').id)
    expect(schema.count).toBe(schema.fields.length)
    expect(schema.schema_hash).toMatch(/^[0-9a-f]{64}$/)
    await expect(client.getStatements(byType('statement_reporting').id, { last_modified_after: '2026-01-01T00:00:00' })).rejects.toThrow(
      RangeError,
    )
  })

  it('syncSince returns every row, then only the rows changed after the mark, with a new mark', async () => {
    const structure = byType('statement_reporting')
    const first = await client.syncSince(structure, null, { limit: 4 })
    expect(ids(first.rows)).toEqual(ids(await collect(client.statements(structure.id))))
    // The mark is the service's time before the walk, less the clock-skew margin: not after now.
    expect(Date.now() - Date.parse(first.highWaterMark)).toBeGreaterThanOrEqual(DEFAULT_CLOCK_SKEW_MS)
    expect(Date.parse(first.highWaterMark)).toBeGreaterThan(Date.now() - 60_000)

    expect((await client.syncSince(structure, first.highWaterMark)).rows).toEqual([])
    const edited = first.rows[2]['standard.id'] as string
    const edit = await server.call(`/admin/companies/${companyId}/statements/${edited}`, {
      method: 'PATCH',
      headers: admin,
      body: { payment: 4321 },
    })
    expect(edit.status, edit.text).toBe(200)

    const second = await client.syncSince(structure, first.highWaterMark)
    expect(ids(second.rows)).toEqual([edited])
    expect(second.rows[0]['standard.total_commission']).toMatchObject({ value: 4321 })
    expect(Date.parse(second.highWaterMark)).toBeGreaterThanOrEqual(Date.parse(first.highWaterMark))
  })

  it('upserts return the import; waitForImport polls it until finished', async () => {
    const receipt = await client.upsertUsers([{ email: 'new.hire@demo.example', name: 'New Hire', currency: 'EUR' }])
    expect(receipt).toEqual({ import_id: expect.any(String), objects_imported: 1 })
    const done = await client.waitForImport(receipt.import_id, { timeoutMs: 10_000, intervalMs: 20 })
    expect(done).toMatchObject({ id: receipt.import_id, status: 'finished', error: false })
    const users = await collect(client.users())
    expect(users.find((user) => user.email === 'new.hire@demo.example')).toMatchObject({ name: 'New Hire', status: 'active' })

    const manager: ManagerAttribution = {
      user: 'new.hire@demo.example',
      manager: 'admin@demo.example',
      start_date: '2026-01',
      end_date: null,
    }
    const managers = await client.upsertManagers([manager])
    // An attribution call answers the items it carried beside its import.
    expectTypeOf(managers).toEqualTypeOf<AttributionReceipt<ManagerAttribution>>()
    expect(managers).toEqual({ import_id: expect.any(String), objects_imported: 1, count: 1, data: [manager] })
    expect(managers.data[0].manager).toBe('admin@demo.example')
    expect(managers.import_id).not.toBe(receipt.import_id)
    expect(await client.waitForImport(managers.import_id, { intervalMs: 20 })).toMatchObject({ status: 'finished', error: false })
    const group: GroupAttribution = { user: 'new.hire@demo.example', group_dimension: 'team', group: 'North', start_date: '2026-01' }
    const groups = await client.upsertGroups([group])
    expectTypeOf(groups).toEqualTypeOf<AttributionReceipt<GroupAttribution>>()
    expect(groups).toEqual({ import_id: expect.any(String), objects_imported: 1, count: 1, data: [group] })
    expect(await client.waitForImport(groups.import_id, { intervalMs: 20 })).toMatchObject({ status: 'finished', error: false })

    const [record] = (await client.listTableRecords('deals', { limit: 1 })).data
    const records = await client.upsertTableRecords('deals', [{ ...record, product: 'Renamed product' }])
    expect(records.objects_imported).toBe(1)
    const recordsDone = await client.waitForImport(records.import_id, { intervalMs: 20 })
    expect(recordsDone, JSON.stringify(recordsDone)).toMatchObject({ status: 'finished', error: false })
    expect((await client.listTableRecords('deals', { limit: 1 })).data[0]).toEqual({ ...record, product: 'Renamed product' })

    expect(await client.archiveUsers([{ user: 'new.hire@demo.example' }])).toEqual({ message: expect.any(String) })
    expect((await collect(client.users())).find((user) => user.email === 'new.hire@demo.example')?.status).toBe('archived')
  })

  it('waitForImport gives up after its timeout with the import as last read', async () => {
    const receipt = await client.upsertUsers([{ email: 'later@demo.example' }], { debounce: 30 })
    const error = await client.waitForImport(receipt.import_id, { timeoutMs: 150, intervalMs: 20 }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(ImportTimeoutError)
    expect((error as ImportTimeoutError).last).toMatchObject({ id: receipt.import_id, status: 'scheduled' })
  })

  it('throws typed errors that carry the documented body and the request id', async () => {
    const missing = await client.getStatements('0123456789abcdef01234567').catch((error: unknown) => error)
    expect(missing).toBeInstanceOf(NotFoundApiError)
    const notFound = missing as NotFoundApiError
    expect(notFound.status).toBe(404)
    expect(notFound.body).toEqual({ message: expect.any(String), resource: 'table', type: 'NotFoundError' })
    expect(requestLines(server).find((line) => line.request_id === notFound.requestId)).toMatchObject({ res: { statusCode: 404 } })

    const tooMany = await client.getStatements(byType('statement_reporting').id, { limit: 2001 }).catch((error: unknown) => error)
    expect(tooMany).toBeInstanceOf(ValidationApiError)
    expect((tooMany as ValidationApiError).resources).toEqual(['limit'])
    expect((tooMany as ValidationApiError).body).toEqual({
      count: 1,
      errors: [{ error: 'ValidationError', resource: 'limit', description: expect.any(String) }],
    })

    const stranger = new CommissionClient({ baseUrl: server.url, apiKey: 'cak_not-a-key' })
    const unknownKey = await stranger.listDataStructures().catch((error: unknown) => error)
    await stranger.close()
    expect(unknownKey).toBeInstanceOf(UnauthorizedApiError)
    expect((unknownKey as UnauthorizedApiError).body).toEqual({ message: expect.any(String), type: 'UnauthorizedError' })

    const closed = await server.load({ ...smallFixture('Closed'), company: { name: 'Closed', public_api_enabled: false } })
    const closedClient = new CommissionClient({ baseUrl: server.url, apiKey: closed.apiKey })
    const forbidden = await closedClient.listUsers().catch((error: unknown) => error)
    await closedClient.close()
    expect(forbidden).toBeInstanceOf(ForbiddenApiError)
    expect((forbidden as ForbiddenApiError).body).toEqual({ message: expect.any(String), type: 'ForbiddenError', error: 'ForbiddenError' })
  })

  it('resumes a walk after the connection drops in the middle of an answer', async () => {
    const proxy = await startCuttingProxy(server.url)
    const structure = byType('statement_reporting')
    const direct = await collect(client.rows(structure, { limit: 3 }))
    const throughProxy = new CommissionClient({ baseUrl: proxy.url, apiKey, retry: { baseDelayMs: 10 } })
    try {
      const firstPage = await throughProxy.getStatements(structure.id, { limit: 3 })
      // Cut the answer of the third page in its middle: two pages and a half after this point.
      proxy.cutAfter(Math.round(JSON.stringify(firstPage).length * 2.5))
      const before = requestLines(server).length
      const walked = await collect(throughProxy.rows(structure, { limit: 3 }))
      expect(proxy.cuts).toBe(1)
      expect(walked).toEqual(direct)
      const urls = requestLines(server)
        .slice(before)
        .map((line) => line.req?.url ?? line.url)
      // One page was asked twice (the cut one): every other once.
      expect(urls.length).toBe(Math.ceil(direct.length / 3) + 1)
      expect(new Set(urls).size).toBe(Math.ceil(direct.length / 3))
    } finally {
      await throughProxy.close()
      await proxy.close()
    }
  })

  // Last of this group: it changes statements, which the incremental reads above would otherwise see.
  it('types a statement total as nullable, as the service sends it when the figures cannot be stated', async () => {
    expectTypeOf<StatementRow['standard.total_commission']>().toEqualTypeOf<Amount | null>()
    const rates = (await server.store.companies.get(companyId))!.exchange_rates
    const rateless = await server.call(`/admin/companies/${companyId}/exchange-rates`, { method: 'PUT', headers: admin, body: {} })
    expect(rateless.status, rateless.text).toBe(200)
    try {
      const totals = (await collect(client.statements(byType('statement_reporting').id))).map((row) => row['standard.total_commission'])
      expect(totals).toContain(null)
      expect(totals.filter((total) => total !== null)[0]).toEqual({ value: expect.any(Number), currency: expect.any(String) })
    } finally {
      await server.call(`/admin/companies/${companyId}/exchange-rates`, { method: 'PUT', headers: admin, body: rates })
    }
  })

  it('a v1 walk misses a row when one before its position is deleted meanwhile; a v2 walk does not (docs/clients.md)', async () => {
    const lines = byType('record_reporting').id
    const v1 = client.tableRecords('deals', { limit: 5 })
    const v2 = client.records(lines, { limit: 5 })
    const v1Read = [(await v1.next()).value!]
    const v2Read = [(await v2.next()).value!]
    // Both walks have read their first page: delete the first row of each (a line goes with its deal, which the
    // line names by its other fields).
    const lineDeal = (await client.listTableRecords('deals')).data.find(
      (deal) =>
        deal.name === v2Read[0]['datatable.name'] &&
        deal.owner_id === v2Read[0]['datatable.owner_id'] &&
        String(deal.close_date).startsWith(String(v2Read[0]['datatable.close_date'])),
    )!
    const receipt = await client.upsertTableRecords('deals', [
      { id: v1Read[0].id, deleted: true },
      { id: lineDeal.id, deleted: true },
    ])
    expect(await client.waitForImport(receipt.import_id, { intervalMs: 20 })).toMatchObject({ error: false })

    v1Read.push(...(await collect(v1)))
    const v1Missed = (await collect(client.tableRecords('deals'))).filter((record) => !v1Read.some((read) => read.id === record.id))
    expect(v1Missed.length).toBeGreaterThanOrEqual(1)

    v2Read.push(...(await collect(v2)))
    const v2Ids = new Set(v2Read.map((line) => line['standard.id']))
    expect((await collect(client.records(lines))).filter((line) => !v2Ids.has(line['standard.id']))).toEqual([])
  })

  describe('a 503 with Retry-After, on a read it retries', () => {
    it('is waited for as long as it asks before the read is sent again', async () => {
      await setFault({ method: 'GET', path: '/v2/data-structures', status: 503, retry_after: 1, times: 2 })
      const started = Date.now()
      const { data } = await client.listDataStructures()
      expect(data.length).toBeGreaterThan(0)
      // Twice the second each 503 asked for, not the quick backoff (250 ms, then 500 ms).
      expect(Date.now() - started).toBeGreaterThanOrEqual(2000)
      expect(await latestStatuses('/v2/data-structures', 3)).toEqual([200, 503, 503])
    })

    it('is not waited for past retry.maxRetryAfterMs: the 503 is answered at once, not retried sooner than asked', async () => {
      await setFault({ method: 'GET', path: '/v2/data-structures', status: 503, retry_after: 5, times: 1 })
      const impatient = new CommissionClient({ baseUrl: server.url, apiKey, retry: { maxRetryAfterMs: 1000 } })
      try {
        const started = Date.now()
        await expect(impatient.listDataStructures()).rejects.toMatchObject({ status: 503 })
        expect(Date.now() - started).toBeLessThan(1000)
        expect(await latestStatuses('/v2/data-structures', 1)).toEqual([503])
      } finally {
        await impatient.close()
      }
    })

    it('is not waited for past 10 s by default: one of 30 s is the caller’s at once, not minutes of waits', async () => {
      await setFault({ method: 'GET', path: '/v2/data-structures', status: 503, retry_after: 30, times: 1 })
      const defaults = new CommissionClient({ baseUrl: server.url, apiKey })
      try {
        const started = Date.now()
        await expect(defaults.listDataStructures()).rejects.toMatchObject({ status: 503 })
        expect(Date.now() - started).toBeLessThan(1000)
        expect(await latestStatuses('/v2/data-structures', 1)).toEqual([503])
      } finally {
        await defaults.close()
      }
    })

    it('that the client does not wait for (a write, a read past its bound) tells the caller its Retry-After', async () => {
      await setFault({ method: 'PUT', path: '/v1/users/bulk', status: 503, retry_after: 7, times: 1 })
      await setFault({ method: 'GET', path: '/v2/data-structures', status: 503, retry_after: 30, times: 1 })
      await expect(client.upsertUsers([{ email: 'busy@demo.example' }])).rejects.toMatchObject({ status: 503, retryAfterSeconds: 7 })
      await expect(client.listDataStructures()).rejects.toMatchObject({ status: 503, retryAfterSeconds: 30 })
      await setFault({ method: 'PUT', path: '/v1/users/bulk', status: 503, times: 1 })
      await expect(client.upsertUsers([{ email: 'busy@demo.example' }])).rejects.toMatchObject({ status: 503, retryAfterSeconds: null })
    })

    it('of 0 still backs off before the read is sent again', async () => {
      await setFault({ method: 'GET', path: '/v2/data-structures', status: 503, retry_after: 0, times: 1 })
      const patient = new CommissionClient({ baseUrl: server.url, apiKey, retry: { baseDelayMs: 1000 } })
      try {
        const started = Date.now()
        const { data } = await patient.listDataStructures()
        expect(data.length).toBeGreaterThan(0)
        expect(Date.now() - started).toBeGreaterThanOrEqual(1000)
        expect(await latestStatuses('/v2/data-structures', 2)).toEqual([200, 503])
      } finally {
        await patient.close()
      }
    })
  })

  describe('a signal', () => {
    const isAbort = { name: 'AbortError' }

    it('ends a call waiting out a 429: it rejects with the abort at once, not after Retry-After', async () => {
      await setFault({ method: 'GET', path: '/v2/reporting/*/statements', status: 429, retry_after: 8, times: 1 })
      // A client of its own: a 429 holds every request of the client that met it.
      const waiting = new CommissionClient({ baseUrl: server.url, apiKey })
      const controller = new AbortController()
      try {
        const started = Date.now()
        const call = waiting.getStatements(byType('statement_reporting').id, {}, { signal: controller.signal })
        setTimeout(() => controller.abort(), 300)
        await expect(call).rejects.toMatchObject(isAbort)
        expect(Date.now() - started).toBeLessThan(2000)
        expect(await latestStatuses('/v2/reporting', 1)).toEqual([429])
      } finally {
        await waiting.close()
      }
    })

    it('ends a walk waiting out a 429 between two pages', async () => {
      const waiting = new CommissionClient({ baseUrl: server.url, apiKey })
      const controller = new AbortController()
      try {
        const rows = waiting.statements(byType('statement_reporting').id, { limit: 2 }, { signal: controller.signal })
        await rows.next()
        await rows.next()
        await setFault({ method: 'GET', path: '/v2/reporting/*/statements', status: 429, retry_after: 8, times: 1 })
        const started = Date.now()
        setTimeout(() => controller.abort(), 300)
        await expect(rows.next()).rejects.toMatchObject(isAbort)
        expect(Date.now() - started).toBeLessThan(2000)
      } finally {
        await waiting.close()
      }
    })

    it.each(['statements', 'users'] as const)('stops a walk (%s) at the next row, asking no other page', async (walk) => {
      const controller = new AbortController()
      const { signal } = controller
      const rows =
        walk === 'statements'
          ? client.statements(byType('statement_reporting').id, { limit: 3 }, { signal })
          : client.users({ limit: 3 }, { signal })
      const before = requestLines(server).length
      expect((await rows.next()).done).toBe(false)
      controller.abort()
      await expect(rows.next()).rejects.toMatchObject(isAbort)
      expect(requestLines(server).length - before).toBe(1)
    })

    it('ends waitForImport with the signal’s reason, not as a timeout', async () => {
      const receipt = await client.upsertUsers([{ email: 'waited.for@demo.example' }], { debounce: 30 })
      const reason = new Error('no longer needed')
      const controller = new AbortController()
      setTimeout(() => controller.abort(reason), 200)
      await expect(client.waitForImport(receipt.import_id, { intervalMs: 20, signal: controller.signal })).rejects.toBe(reason)
    })
  })
})

/** A stand-in service answering every request with `answer`; returns its URL and the request ids it received. */
async function stubService(answer: (request: IncomingMessage, response: ServerResponse) => void) {
  const requestIds: string[] = []
  const server = createServer((request, response) => {
    requestIds.push(String(request.headers['x-request-id']))
    answer(request, response)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}`,
    requestIds,
    close: () => {
      server.closeAllConnections()
      server.close()
    },
  }
}

describe('the client against a service that stalls or cuts off', () => {
  it.each([
    ['an answer that never comes', (_request: IncomingMessage, _response: ServerResponse) => undefined],
    [
      'a 429 asking to wait 20 s',
      (_request: IncomingMessage, response: ServerResponse) =>
        response
          .writeHead(429, { 'content-type': 'application/json', 'retry-after': '20' })
          .end('{"message":"Too many requests","type":"TooManyRequestsError"}'),
    ],
  ])('waitForImport gives up at its timeout, even during %s', async (_case, answer) => {
    const service = await stubService(answer)
    const client = new CommissionClient({ baseUrl: service.url, apiKey: 'cak_stub-key-of-the-client-tests' })
    try {
      const error = await client.waitForImport('0123456789abcdef01234567', { timeoutMs: 300 }).catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(ImportTimeoutError)
      expect((error as ImportTimeoutError).last).toBeNull()
      expect((error as Error).message).toBe('import 0123456789abcdef01234567 could not be read within 300 ms')
    } finally {
      await client.close()
      service.close()
    }
  })

  it('waitForImport takes any timeout: 0 reads once, a huge or infinite one bounds nothing', async () => {
    let reads = 0
    const service = await stubService((_request, response) => {
      reads++
      const status = reads >= 3 ? 'finished' : 'started'
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data_import: { id: 'i', status } }))
    })
    const client = new CommissionClient({ baseUrl: service.url, apiKey: 'cak_stub-key-of-the-client-tests' })
    try {
      const readOnce = await client.waitForImport('0123456789abcdef01234567', { timeoutMs: 0 }).catch((caught: unknown) => caught)
      expect(readOnce).toBeInstanceOf(ImportTimeoutError)
      expect((readOnce as ImportTimeoutError).last).toMatchObject({ status: 'started' })
      await expect(client.waitForImport('0123456789abcdef01234567', { timeoutMs: Number.NaN })).rejects.toThrow(RangeError)
      for (const timeoutMs of [2 ** 31, Number.POSITIVE_INFINITY, 1500.5]) {
        reads = 0
        expect(await client.waitForImport('0123456789abcdef01234567', { timeoutMs, intervalMs: 10 })).toMatchObject({ status: 'finished' })
      }
    } finally {
      await client.close()
      service.close()
    }
  })

  it('a read given up by its signal while waiting out a 429 rejects with the signal’s reason', async () => {
    const service = await stubService((_request, response) =>
      response
        .writeHead(429, { 'content-type': 'application/json', 'retry-after': '20' })
        .end('{"message":"Too many requests","type":"TooManyRequestsError"}'),
    )
    const client = new CommissionClient({ baseUrl: service.url, apiKey: 'cak_stub-key-of-the-client-tests' })
    try {
      const reason = new Error('given up')
      const controller = new AbortController()
      setTimeout(() => controller.abort(reason), 200)
      await expect(client.getImport('0123456789abcdef01234567', { signal: controller.signal })).rejects.toBe(reason)
    } finally {
      await client.close()
      service.close()
    }
  })

  it('a read cut off by the network is sent again after its backoff plus a little at random', async () => {
    const arrivals: number[] = []
    const service = await stubService((request) => {
      arrivals.push(Date.now())
      request.socket.destroy()
    })
    const client = new CommissionClient({
      baseUrl: service.url,
      apiKey: 'cak_stub-key-of-the-client-tests',
      retry: { attempts: 1, baseDelayMs: 1000 },
    })
    // The most the jitter adds: a tenth of the 1 s backoff.
    const random = vi.spyOn(Math, 'random').mockReturnValue(1)
    try {
      await expect(client.getImport('0123456789abcdef01234567')).rejects.toBeInstanceOf(ConnectionError)
      expect(arrivals).toHaveLength(2)
      expect(arrivals[1] - arrivals[0]).toBeGreaterThanOrEqual(1080)
    } finally {
      random.mockRestore()
      await client.close()
      service.close()
    }
  })

  it('a read answered 503 with a Retry-After date already past is sent again after its backoff, not at once', async () => {
    const arrivals: number[] = []
    const service = await stubService((_request, response) => {
      arrivals.push(Date.now())
      response
        .writeHead(503, { 'content-type': 'application/json', 'retry-after': 'Sun, 06 Nov 1994 08:49:37 GMT' })
        .end('{"message":"Not now","type":"ServiceUnavailableError"}')
    })
    const client = new CommissionClient({
      baseUrl: service.url,
      apiKey: 'cak_stub-key-of-the-client-tests',
      retry: { attempts: 1, baseDelayMs: 500 },
    })
    try {
      await expect(client.getImport('0123456789abcdef01234567')).rejects.toMatchObject({ status: 503 })
      expect(arrivals).toHaveLength(2)
      expect(arrivals[1] - arrivals[0]).toBeGreaterThanOrEqual(500)
    } finally {
      await client.close()
      service.close()
    }
  })

  it('a ConnectionError names the request id the caller chose, when it chose one', async () => {
    const service = await stubService((request) => request.socket.destroy())
    const client = new CommissionClient({ baseUrl: service.url, apiKey: 'cak_stub-key-of-the-client-tests' })
    try {
      const error = await client.transport
        .send({ method: 'PUT', path: '/v1/users/bulk', body: { data: [] }, headers: { 'X-Request-Id': 'my-own-id' } })
        .catch((caught: unknown) => caught)
      expect(service.requestIds).toEqual(['my-own-id'])
      expect((error as ConnectionError).requestId).toBe('my-own-id')
    } finally {
      await client.close()
      service.close()
    }
  })

  it('a write cut off in transit throws a ConnectionError with the request id the service received', async () => {
    const service = await stubService((request) => request.socket.destroy())
    const client = new CommissionClient({ baseUrl: service.url, apiKey: 'cak_stub-key-of-the-client-tests' })
    try {
      const error = await client.upsertUsers([{ email: 'cut@demo.example' }]).catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(ConnectionError)
      // Sent once (a write is never sent again), and named by the id the service saw.
      expect(service.requestIds).toHaveLength(1)
      expect((error as ConnectionError).requestId).toBe(service.requestIds[0])
      expect((error as Error).message).toContain(`(request ${service.requestIds[0]})`)
    } finally {
      await client.close()
      service.close()
    }
  })
})

describe('Retry-After as the client reads it', () => {
  it.each([
    ['5', 5],
    [' 0 ', 0],
    ['1.5', 2],
    // Neither seconds nor an HTTP date: the client backs off on its own (null), rather than waiting for nothing.
    ['-1', null],
    ['120, 5', null],
    ['abc', null],
    ['2001-01-01', null],
    ['', null],
    [undefined, null],
    // An HTTP date in the past: no wait.
    ['Sun, 06 Nov 1994 08:49:37 GMT', 0],
    ['Sunday, 06-Nov-94 08:49:37 GMT', 0],
  ])('%j is %j seconds', (header, seconds) => {
    expect(retryAfterSeconds(header)).toBe(seconds)
  })

  it('reads an HTTP date in the future as the seconds until it', () => {
    const inTen = new Date(Date.now() + 10_000).toUTCString()
    expect(retryAfterSeconds(inTen)).toBeGreaterThanOrEqual(9)
    expect(retryAfterSeconds(inTen)).toBeLessThanOrEqual(10)
  })
})

describe('the client under the rate limit', () => {
  let server: TestServer
  let apiKey: string
  let tableId: string

  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_PER_SECOND: '10' }, {}, { runningClock: true })
    ;({ apiKey } = await server.load(smallFixture()))
    tableId = (await server.store.structures.list((await server.store.companies.list())[0].id)).find(
      (item) => item.environment === 'live',
    )!.id
  })
  afterAll(() => server.close())

  const statuses = (from: number) =>
    requestLines(server)
      .slice(from)
      .map((line) => line.res.statusCode as number)

  it('rides out a 429 storm: 30 concurrent calls at 10 a second all succeed, after waiting Retry-After', async () => {
    const client = new CommissionClient({ baseUrl: server.url, apiKey })
    const from = requestLines(server).length
    try {
      const pages = await Promise.all(Array.from({ length: 30 }, () => client.getStatements(tableId)))
      expect(pages.every((page) => page.data.length === 3)).toBe(true)
    } finally {
      await client.close()
    }
    const seen = statuses(from)
    expect(seen.filter((status) => status === 200)).toHaveLength(30)
    expect(seen.filter((status) => status === 429).length).toBeGreaterThanOrEqual(20)
  })

  it('paces itself a little under the limit a 429 states, so that the calls it held do not all come back at once and run out of retries', async () => {
    const client = new CommissionClient({ baseUrl: server.url, apiKey, rateLimit: { maxRetries: 3 } })
    const from = requestLines(server).length
    try {
      // 60 at once where 10 a second pass: released together after each wait, 10 would pass a round, and 20 fail
      // their fourth 429.
      const outcomes = await Promise.allSettled(Array.from({ length: 60 }, () => client.getFields(tableId)))
      expect(outcomes.filter((outcome) => outcome.status === 'rejected')).toEqual([])
    } finally {
      await client.close()
    }
    // The first wave's 50 refusals, and few after it, as the held calls leave about 110 ms apart (released together,
    // they would meet 50 + 40 + 30 + 20).
    expect(statuses(from).filter((status) => status === 429).length).toBeLessThan(100)
  })

  it('reads the limit a 429 states only as a whole number of requests a second, the first of a list', () => {
    expect(statedLimit({ 'ratelimit-limit': '80' })).toBe(80)
    expect(statedLimit({ 'ratelimit-limit': '80, 80' })).toBe(80)
    expect(statedLimit({ 'ratelimit-limit': ['40', '80'] })).toBe(40)
    for (const odd of ['0.01', '0', '0x50', '1e3', '', 'many']) expect(statedLimit({ 'ratelimit-limit': odd }), odd).toBeNull()
    expect(statedLimit({})).toBeNull()
  })

  it('gives up with a typed error once its bound is reached', async () => {
    const client = new CommissionClient({ baseUrl: server.url, apiKey, rateLimit: { maxRetries: 0 } })
    try {
      const outcomes = await Promise.allSettled(Array.from({ length: 15 }, () => client.getFields(tableId)))
      const refused = outcomes
        .filter((outcome) => outcome.status === 'rejected')
        .map((outcome) => (outcome as PromiseRejectedResult).reason)
      expect(refused.length).toBeGreaterThanOrEqual(5)
      expect(refused[0]).toBeInstanceOf(RateLimitedError)
      expect(refused[0]).toMatchObject({
        status: 429,
        retryAfterSeconds: 1,
        body: { message: expect.any(String), type: 'TooManyRequestsError' },
      })
      expect(refused[0].requestId).toEqual(expect.any(String))
    } finally {
      await client.close()
    }
    const waited = new CommissionClient({ baseUrl: server.url, apiKey, rateLimit: { maxWaitMs: 500 } })
    try {
      const outcomes = await Promise.allSettled(Array.from({ length: 15 }, () => waited.getFields(tableId)))
      // Retry-After (1 s) is beyond the 500 ms the client accepts: it throws rather than wait.
      expect(outcomes.some((outcome) => outcome.status === 'rejected' && outcome.reason instanceof RateLimitedError)).toBe(true)
    } finally {
      await waited.close()
    }
  })

  it('paces itself: 20 calls at 8 a second never meet a 429', async () => {
    await new Promise((resolve) => setTimeout(resolve, 1100))
    const client = new CommissionClient({ baseUrl: server.url, apiKey, requestsPerSecond: 8 })
    const from = requestLines(server).length
    try {
      for (let index = 0; index < 20; index++) await client.getFields(tableId)
    } finally {
      await client.close()
    }
    expect(statuses(from)).toEqual(Array(20).fill(200))
  })
})
