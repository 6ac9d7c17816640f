import * as fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ImportWorker } from '../src/imports/worker.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { type Reply, startTestServer, type TestServer } from './helpers/server.ts'

/**
 * A property-based fuzz test over every route the running server documents (its OpenAPI document, admin routes
 * included): hostile paths, query strings, headers and bodies. Invariants only, so that it holds whatever a
 * route's own rules are: never a 5xx, every 4xx in the documented body of its status family, and no import of
 * an accepted payload that fails for a reason of ours. `npm run test:fuzz -- --runs N` runs it longer.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 1500)
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED)
const ADMIN_TOKEN = 'fuzz-test-admin-token-0123456789'

const text = fc.string({ maxLength: 12 })

/** The body each status family documents (docs/interface.md, "Errors"); null when the status has none. */
function documentedShapeProblem(reply: Reply): string | null {
  const body = reply.body
  const isObject = typeof body === 'object' && body !== null && !Array.isArray(body)
  if (!isObject) return `a ${reply.status} whose body is not a JSON object: ${reply.text.slice(0, 200)}`
  const keys = Object.keys(body).toSorted().join(',')
  switch (reply.status) {
    case 400:
    case 408:
    case 409:
    case 413:
    case 414:
    case 431: {
      const errorsOk =
        Array.isArray(body.errors) &&
        body.errors.length > 0 &&
        body.count === body.errors.length &&
        body.errors.every(
          (error: Record<string, unknown>) =>
            Object.keys(error).toSorted().join(',') === 'description,error,resource' &&
            typeof error.error === 'string' &&
            typeof error.resource === 'string' &&
            typeof error.description === 'string',
        )
      return keys === 'count,errors' && errorsOk ? null : 'not {count, errors: [{error, resource, description}]}'
    }
    case 401:
      return keys === 'message,type' && body.type === 'UnauthorizedError' ? null : 'not {message, type: UnauthorizedError}'
    case 403:
      return keys === 'error,message,type' && body.type === 'ForbiddenError' && body.error === 'ForbiddenError' ? null : 'not the 403 body'
    case 404:
      return keys === 'message,resource,type' && body.type === 'NotFoundError' && typeof body.resource === 'string'
        ? null
        : 'not the 404 body'
    case 405:
      return keys === 'message,resource,type' && body.type === 'MethodNotAllowedError' && typeof reply.headers.allow === 'string'
        ? null
        : 'not the 405 body with Allow'
    case 429:
      return keys === 'message,type' && body.type === 'TooManyRequestsError' && reply.headers['retry-after'] !== undefined
        ? null
        : 'not the 429 body'
    default:
      return `a ${reply.status}, which no family documents`
  }
}

interface Route {
  method: string
  template: string
}

describe('fuzz: every route, hostile input', () => {
  let server: TestServer
  let routes: Route[]
  let keys: { valid: string; other: string; disabled: string }
  let ids: string[]
  let companyIds: string[]
  /** The imports the fuzzed calls created: [company id, import id]. */
  const created: [string, string][] = []

  beforeAll(async () => {
    server = await startTestServer({ ADMIN_TOKEN, RATE_LIMIT_PER_SECOND: '1000000' })
    const main = await server.load(smallFixture('Acme'))
    const other = await server.load(smallFixture('Other'))
    const disabledFixture = smallFixture('Closed')
    disabledFixture.company.public_api_enabled = false
    const disabled = await server.load(disabledFixture)
    keys = { valid: main.apiKey, other: other.apiKey, disabled: disabled.apiKey }
    companyIds = [main.companyId, other.companyId]
    const inventory = await server.call(`/admin/companies/${main.companyId}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    ids = inventory.body.structures.map((item: { id: string }) => item.id)
    const openapi = await server.call('/openapi.json')
    routes = Object.entries(openapi.body.paths as Record<string, Record<string, unknown>>).flatMap(([template, operations]) =>
      Object.keys(operations)
        .filter((method) => ['get', 'put', 'post', 'delete', 'patch'].includes(method))
        .map((method) => ({ method: method.toUpperCase(), template })),
    )
  })
  afterAll(() => server.close())

  it('knows the routes to fuzz', () => {
    expect(routes.length).toBeGreaterThan(20)
    expect(routes).toContainEqual({ method: 'POST', template: '/v1/tables/{data_table_key}/records/bulk' })
  })

  it('never answers 5xx, and answers every 4xx in the documented body of its family', async () => {
    const hostileSegment = fc.oneof(
      fc.constantFrom('%zz', '%', '%E0%A4%A', '..', '.', '%2F', '%00', 'a'.repeat(101), '0123456789abcdef01234567', 'deals', 'DEALS'),
      text.map(encodeURIComponent),
      fc.string({ unit: 'grapheme', maxLength: 8 }).map(encodeURIComponent),
    )
    const pathValue = fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...ids, ...companyIds, 'deals', 'users') },
      { weight: 2, arbitrary: hostileSegment },
    )
    const queryName = fc.oneof(
      fc.constantFrom('limit', 'offset', 'start_id', 'last_modified_after', 'last_modified_before', 'debounce', 'all', 'keep_overrides'),
      text,
    )
    const queryValue = fc.oneof(
      fc.constantFrom(
        '0',
        '1',
        '2000',
        '2001',
        '-1',
        '9223372036854775808',
        '1e3',
        'true',
        'false',
        '2026-01-31T10:00:00Z',
        '2026-13-45',
        '',
      ),
      ...ids.slice(0, 2).map((id) => fc.constant(id)),
      text,
    )
    const query = fc.array(fc.tuple(queryName, queryValue), { maxLength: 4 })
    const itemKey = fc.oneof(
      fc.constantFrom('email', 'name', 'role', 'currency', 'junior', 'region', 'base_salary', 'base_salary_currency', 'user', 'manager'),
      fc.constantFrom(
        'group',
        'group_dimension',
        'start_date',
        'end_date',
        'deal_id',
        'deal_name',
        'amount',
        'amount_currency',
        'deal_types',
        'deleted',
      ),
      fc.constantFrom(
        'toString',
        'valueOf',
        'constructor',
        'hasOwnProperty',
        '__proto__',
        'type',
        'value',
        'modified_at',
        'status',
        'payment',
      ),
      text,
    )
    const itemValue = fc.oneof(
      fc.jsonValue({ maxDepth: 2 }),
      fc.constantFrom('owner@acme.example', 'rep@acme.example', 'gone@acme.example', 'EUR', '2026-01', '2026-01-31', 'a;b', {
        toString: 1,
      }),
    )
    const item = fc.dictionary(itemKey, itemValue, { maxKeys: 6 })
    const body = fc.oneof(
      fc.record({ data: fc.array(item, { maxLength: 4 }) }),
      fc.array(item, { maxLength: 4 }),
      fc.jsonValue({ maxDepth: 3 }),
      fc.constant(undefined),
      fc.constantFrom('{"data": [', 'not json', '', '[]', 'null', '{}', '"x"'),
    )
    const key = fc.constantFrom(keys.valid, keys.valid, keys.valid, keys.other, keys.disabled, 'cak_not-a-key', '', undefined)
    const contentType = fc.constantFrom('application/json', 'application/json', 'text/plain', 'application/json; charset=utf-8', undefined)
    const otherMethod = fc.oneof(
      { weight: 5, arbitrary: fc.constant(null) },
      { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT', 'POST', 'DELETE', 'PATCH') },
    )

    const request = fc.record({
      route: fc.constantFrom(...routes),
      method: otherMethod,
      values: fc.array(pathValue, { minLength: 3, maxLength: 3 }),
      query,
      body,
      key,
      contentType,
      admin: fc.boolean(),
    })

    await fc.assert(
      fc.asyncProperty(request, async (input) => {
        let position = 0
        const path = input.route.template.replace(/\{[^}]+\}/g, () => input.values[position++ % input.values.length])
        const search = input.query.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join('&')
        const headers: Record<string, string> = {}
        if (input.contentType) headers['content-type'] = input.contentType
        if (input.admin) headers.authorization = `Bearer ${ADMIN_TOKEN}`
        const method = (input.method ?? input.route.method) as 'GET'
        const sendsBody = input.body !== undefined && method !== 'GET'
        const reply = await server.call(`${path}${search ? `?${search}` : ''}`, {
          method,
          key: input.key,
          headers,
          body: sendsBody ? input.body : undefined,
        })
        if (reply.status === 200 && typeof reply.body?.import_id === 'string') {
          const owner = input.key === keys.other ? companyIds[1] : companyIds[0]
          created.push([owner, reply.body.import_id])
        }
        const seen = `${method} ${path}?${search} → ${reply.status} ${reply.text.slice(0, 300)}`
        expect(reply.status, seen).toBeLessThan(500)
        expect(reply.status < 400 ? null : documentedShapeProblem(reply), seen).toBeNull()
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    )
    expect(server.logs.filter((line) => line.msg === 'request failed')).toEqual([])
  }, 600_000)

  it('applies every payload it accepted without an import failing for a reason of ours', async () => {
    // Every debounce window closes; then the imports are run.
    server.clock.advance(86_400_001)
    const worker = new ImportWorker({ store: server.store, clock: server.clock, owner: 'fuzz-worker' })
    await worker.drain()
    for (const [companyId, importId] of created) {
      // Null when its company was deleted through the admin routes, with its imports.
      const record = (await server.store.imports.get(companyId, importId)) ?? { status: 'finished' as const, details: [] }
      expect(record.status, importId).toBe('finished')
      expect(
        record.details.map((detail) => detail.error?.description ?? ''),
        importId,
      ).not.toContainEqual(expect.stringContaining('internal error'))
    }
  }, 600_000)
})
