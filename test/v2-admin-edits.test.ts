import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { smallFixture } from './helpers/fixtures.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'
import { V2_TEST_ENV, admin, badParameter, idsByName, notFound } from './v2-support.ts'

describe('admin routes that edit a company’s data (for schema changes and incremental syncs)', () => {
  let server: TestServer
  let companyId: string
  let apiKey: string
  let id: (name: string) => string

  beforeAll(async () => {
    server = await startTestServer(V2_TEST_ENV, {}, { transport: 'inject' })
    ;({ companyId, apiKey } = await server.load(smallFixture()))
    id = await idsByName(server, companyId)
  })
  afterAll(() => server.close())

  const patch = (path: string, body: unknown, headers: Record<string, string> = admin) =>
    server.call(`/admin/companies/${companyId}${path}`, { method: 'PATCH', headers, body })

  it('require the admin token', async () => {
    const reply = await patch(`/quotas/${id('Monthly bookings')}`, { type: 'float' }, { authorization: 'Bearer wrong' })
    expect(reply.status).toBe(401)
    expect((await server.store.quotas.get(companyId, id('Monthly bookings')))?.type).toBe('amount')
  })

  it('empty a statement’s payment with null (not 0)', async () => {
    const [statement] = await server.store.statements.page(companyId, 'live', { limit: 1 })
    const reply = await patch(`/statements/${statement.id}`, { payment: null, modified_at: statement.modified_at })
    expect(reply.body).toEqual({ ...statement, payment: null })
    await patch(`/statements/${statement.id}`, { payment: statement.payment, modified_at: statement.modified_at })
  })

  it('set a statement’s payment to 0 as 0, and a metric’s currencies to null as null (no coercion between them)', async () => {
    const [statement] = await server.store.statements.page(companyId, 'live', { limit: 1 })
    const zero = await patch(`/statements/${statement.id}`, { payment: 0, modified_at: statement.modified_at })
    expect(zero.body).toEqual({ ...statement, payment: 0 })
    expect((await server.store.statements.page(companyId, 'live', { limit: 1 }))[0].payment).toBe(0)
    await patch(`/statements/${statement.id}`, { payment: statement.payment, modified_at: statement.modified_at })

    const before = (await server.store.metrics.list(companyId)).find((metric) => metric.api_key === 'tier')
    const cleared = await patch('/custom-metrics/tier', { currencies: null })
    expect(cleared.status).toBe(200)
    expect(cleared.body.currencies).toBeNull()
    const refused = await patch('/custom-metrics/tier', { currencies: [''] })
    expect(refused.status).toBe(400)
    await patch('/custom-metrics/tier', { currencies: before?.currencies ?? null })
  })

  it('touch a row: without modified_at, an edit stamps the clock’s now', async () => {
    const [value] = await server.store.quotaValues.page(companyId, id('Monthly bookings'), { limit: 1 })
    server.clock.set('2026-07-01T12:00:00.000Z')
    const reply = await patch(`/quota-values/${value.id}`, {})
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({ ...value, modified_at: '2026-07-01T12:00:00.000Z' })
  })

  it('set a row’s modification time as given, to the millisecond: digits past it may only be zeros', async () => {
    const [value] = await server.store.quotaValues.page(companyId, id('Monthly bookings'), { limit: 1 })
    const reply = await patch(`/quota-values/${value.id}`, { modified_at: '2026-01-31T12:00:00.123000+02:00' })
    expect(reply.status).toBe(200)
    expect(reply.body.modified_at).toBe('2026-01-31T10:00:00.123Z')
    // The quota values' inclusive bounds at the instant the edit gave find the row.
    const at = 'last_modified_after=2026-01-31T10:00:00.123Z&last_modified_before=2026-01-31T10:00:00.1230001Z'
    const found = await server.call(`/v2/quotas/${id('Monthly bookings')}/values?${at}`, { key: apiKey })
    expect(found.body.data.map((row: any) => row['standard.id'])).toEqual([value.id])
    await patch(`/quota-values/${value.id}`, { modified_at: value.modified_at })
  })

  it.each([
    ['/quotas/{quota}', { type: 'bogus' }, 'type'],
    ['/quotas/{quota}', {}, 'type'],
    ['/statements/{statement}', { payment: 'a lot' }, 'payment'],
    ['/statements/{statement}', { modified_at: 'soon' }, 'modified_at'],
    // Rows are stamped to the millisecond: kept as .123, a time of .1234 would be missed by a sync from that instant.
    ['/statements/{statement}', { modified_at: '2026-01-31T10:00:00.1234Z' }, 'modified_at'],
    ['/quota-values/{value}', { modified_at: '2026-01-31T10:00:00.000001+02:00' }, 'modified_at'],
    ['/commission-lines/{line}', { modified_at: '2026-01-31T10:00:00.9999999Z' }, 'modified_at'],
    ['/statements/{statement}', { color: 'red' }, 'color'],
    ['/quota-values/{value}', { source: 'excel' }, 'source'],
    ['/reporting-structures/{structure}', { metrics: ['nope'] }, 'metrics'],
    ['/reporting-structures/{structure}', { fields: ['deal_name'] }, 'fields'],
    ['/reporting-structures/{structure}', { metrics: ['tier', 'tier'] }, 'metrics'],
    ['/custom-metrics/tier', { kind: 'enum', enum_values: null }, 'enum_values'],
    ['/custom-metrics/tier', { kind: 'shape' }, 'kind'],
    // A body says its own types: a value of another type is refused, never coerced (null or "" to 0, true to 1).
    ['/statements/{statement}', { payment: false }, 'payment'],
    ['/statements/{statement}', { payment: '' }, 'payment'],
    ['/quota-values/{value}', { value: null }, 'value'],
    ['/quota-values/{value}', { value: true }, 'value'],
    ['/commission-lines/{line}', { commission: null }, 'commission'],
    ['/commission-lines/{line}', { commission: [7] }, 'commission'],
    ['/commission-lines/{line}', { commission: ' ' }, 'commission'],
    ['/quotas/{quota}', { type: ['float'] }, 'type'],
  ])('answer 400 naming the field for PATCH %s %j', async (template, body, resource) => {
    const [statement] = await server.store.statements.page(companyId, 'live', { limit: 1 })
    const [value] = await server.store.quotaValues.page(companyId, id('Monthly bookings'), { limit: 1 })
    const deals = (await server.store.dataTables.getByKey(companyId, 'live', 'deals'))!.id
    const [line] = await server.store.commissionLines.list(companyId, deals, { offset: 0, limit: 1 })
    const path = template
      .replace('{quota}', id('Monthly bookings'))
      .replace('{statement}', statement.id)
      .replace('{value}', value.id)
      .replace('{line}', line.id)
      .replace('{structure}', id('Statements'))
    const reply = await patch(path, body)
    expect(reply.status).toBe(400)
    // Nothing was changed by the refusal.
    expect((await server.store.statements.page(companyId, 'live', { limit: 1 }))[0]).toEqual(statement)
    expect((await server.store.quotaValues.page(companyId, id('Monthly bookings'), { limit: 1 }))[0]).toEqual(value)
    expect((await server.store.commissionLines.list(companyId, deals, { offset: 0, limit: 1 }))[0]).toEqual(line)
    // A value that fits no branch of a union is reported once per branch, all naming the field.
    expect(reply.body.count).toBeGreaterThan(0)
    expect(reply.body).toEqual({ count: reply.body.errors.length, errors: reply.body.errors.map(() => badParameter(resource).errors[0]) })
  })

  it.each([
    ['/quotas/0123456789abcdef01234567', { type: 'float' }, 'quota'],
    ['/statements/0123456789abcdef01234567', {}, 'statement'],
    ['/commission-lines/0123456789abcdef01234567', {}, 'commission_line'],
    ['/quota-values/not-an-id', {}, 'quota_value'],
    ['/reporting-structures/0123456789abcdef01234567', { name: 'x' }, 'reporting_structure'],
    ['/custom-metrics/unknown_metric', { name: 'x' }, 'custom_metric'],
  ])('answer 404 for PATCH %s of an unknown record', async (path, body, resource) => {
    const reply = await patch(path, body)
    expect(reply.status).toBe(404)
    expect(reply.body).toEqual(notFound(resource))
  })

  it('answer 404 for an unknown company, and never edit another company’s rows', async () => {
    const other = await server.load(smallFixture('Other'))
    const [theirs] = await server.store.statements.page(other.companyId, 'live', { limit: 1 })
    const unknownCompany = await server.call(`/admin/companies/0123456789abcdef01234567/statements/${theirs.id}`, {
      method: 'PATCH',
      headers: admin,
      body: {},
    })
    expect(unknownCompany.status).toBe(404)
    expect(unknownCompany.body).toEqual(notFound('company'))
    const crossed = await patch(`/statements/${theirs.id}`, { payment: 1 })
    expect(crossed.status).toBe(404)
    expect((await server.store.statements.page(other.companyId, 'live', { limit: 1 }))[0]).toEqual(theirs)
  })
})
