import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { smallFixture } from './helpers/fixtures.ts'
import { runCli, tempDataDir } from './helpers/process.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'
import { openRunStore } from './helpers/test-store.ts'
import { V2_TEST_ENV, admin, idsByName, notFound } from './v2-support.ts'

describe('v2 rows: statements, records and quota values', () => {
  let server: TestServer
  let key: string
  let companyId: string
  let id: (name: string) => string
  let users: Map<string, string>

  beforeAll(async () => {
    server = await startTestServer(V2_TEST_ENV, {}, { transport: 'inject' })
    ;({ apiKey: key, companyId } = await server.load(smallFixture()))
    id = await idsByName(server, companyId)
    const found = await server.store.users.findByEmails(companyId, ['owner@acme.example', 'rep@acme.example'])
    users = new Map([...found].map(([email, user]) => [email, user.id]))
  })
  afterAll(() => server.close())

  const get = (path: string) => server.call(path, { key })
  const user = (email: string) => ({ id: users.get(email), email })
  const fieldKeys = async (tableId: string) =>
    (await get(`/v2/data-structures/${tableId}/fields`)).body.fields.map((field: any) => field.api_key)

  describe('GET /v2/reporting/{table_id}/statements', () => {
    it('renders the live statements in id order, keyed by the structure’s api_keys, mixing currencies', async () => {
      const reply = await get(`/v2/reporting/${id('Statements')}/statements`)
      expect(reply.status).toBe(200)
      const stored = await server.store.statements.page(companyId, 'live', { limit: 100 })
      expect(reply.body).toEqual({
        data: [
          {
            'standard.id': stored[0].id,
            'standard.user': user('owner@acme.example'),
            'standard.date': '2026-01-31',
            'standard.total_commission': { value: 1200, currency: 'EUR' },
            'standard.status': 'paid',
            'custom.attainment': 1.2,
            'custom.tier': 'gold',
            'custom.bonus': { value: 200, currency: 'EUR' },
          },
          {
            'standard.id': stored[1].id,
            'standard.user': user('rep@acme.example'),
            'standard.date': '2026-01-31',
            'standard.total_commission': { value: 800, currency: 'USD' },
            'standard.status': 'pending',
            'custom.attainment': 0.8,
            'custom.tier': 'silver',
            'custom.bonus': null,
          },
          {
            'standard.id': stored[2].id,
            'standard.user': user('rep@acme.example'),
            'standard.date': '2026-02-28',
            'standard.total_commission': { value: 900, currency: 'USD' },
            'standard.status': 'validated',
            'custom.attainment': null,
            'custom.tier': null,
            'custom.bonus': null,
          },
        ],
        meta: { next_start_id: null, has_more: false, next_url: null },
      })
      const keys = await fieldKeys(id('Statements'))
      for (const row of reply.body.data) expect(Object.keys(row)).toEqual(keys)
    })

    it('follows the structure’s configuration: a removed metric leaves the rows', async () => {
      const otherFixture = smallFixture('Narrow')
      otherFixture.reporting_structures![0].metrics = ['tier']
      const narrow = await server.load(otherFixture)
      const narrowId = (await idsByName(server, narrow.companyId))('Statements')
      const reply = await server.call(`/v2/reporting/${narrowId}/statements`, { key: narrow.apiKey })
      expect(Object.keys(reply.body.data[0])).toEqual([
        'standard.id',
        'standard.user',
        'standard.date',
        'standard.total_commission',
        'standard.status',
        'custom.tier',
      ])
    })
  })

  describe('GET /v2/reporting/{table_id}/records', () => {
    it('renders the commission lines of the structure’s data table with their record values', async () => {
      const reply = await get(`/v2/reporting/${id('Deal commissions')}/records`)
      expect(reply.status).toBe(200)
      const table = (await server.store.dataTables.getByKey(companyId, 'live', 'deals'))!
      const lines = await server.store.commissionLines.page(companyId, table.id, { limit: 100 })
      expect(reply.body.data).toEqual([
        {
          'standard.id': lines[0].id,
          'standard.user': user('owner@acme.example'),
          'standard.commission_impact': { value: 100, currency: 'EUR' },
          'standard.date': '2026-01-15',
          'datatable.deal_name': 'First deal',
          'datatable.amount': { value: 1000, currency: 'EUR' },
          'datatable.deal_types': 'new;upsell',
          'custom.bonus': { value: 10, currency: 'EUR' },
        },
        {
          'standard.id': lines[1].id,
          'standard.user': user('rep@acme.example'),
          'standard.commission_impact': { value: 250, currency: 'USD' },
          'standard.date': '2026-01-20',
          'datatable.deal_name': 'Second deal',
          'datatable.amount': { value: 2500, currency: 'USD' },
          'datatable.deal_types': 'renewal',
          'custom.bonus': null,
        },
      ])
      const keys = await fieldKeys(id('Deal commissions'))
      for (const row of reply.body.data) expect(Object.keys(row)).toEqual(keys)
    })

    it('serves dates, date-times, booleans and numbers of a data table in the types its schema gives', async () => {
      const fixture = smallFixture('Typed')
      const deals = fixture.data_tables![0]
      deals.fields.push(
        { api_key: 'close_date', name: 'Close date', type: 'date' },
        { api_key: 'closed_at', name: 'Closed at', type: 'datetime' },
        { api_key: 'won', name: 'Won', type: 'boolean' },
        { api_key: 'probability', name: 'Probability', type: 'number' },
      )
      Object.assign(deals.records![0], { close_date: '2026-01-10', closed_at: '2026-01-10T23:30:00-02:00', won: true, probability: 0.9 })
      fixture.reporting_structures![1].fields = ['close_date', 'closed_at', 'won', 'probability']
      const typed = await server.load(fixture)
      const typedId = (await idsByName(server, typed.companyId))('Deal commissions')
      const [first, second] = (await server.call(`/v2/reporting/${typedId}/records`, { key: typed.apiKey })).body.data
      expect(first).toMatchObject({
        'datatable.close_date': '2026-01-10',
        'datatable.closed_at': '2026-01-11',
        'datatable.won': 'true',
        'datatable.probability': 0.9,
      })
      expect(second).toMatchObject({
        'datatable.close_date': null,
        'datatable.closed_at': null,
        'datatable.won': null,
        'datatable.probability': null,
      })
      const schema = (await server.call(`/v2/data-structures/${typedId}/fields`, { key: typed.apiKey })).body.fields
      expect(schema.slice(4, 8).map((field: any) => [field.type, field.format, field.enum_values])).toEqual([
        ['date', 'date', null],
        ['date', 'date', null],
        ['string', 'enum', ['true', 'false']],
        ['number', 'float', null],
      ])
    })
  })

  describe('GET /v2/quotas/{quota_id}/values', () => {
    it('renders exactly five keys; an amount quota’s value is an amount; an unknown user has a null email', async () => {
      const reply = await get(`/v2/quotas/${id('Monthly bookings')}/values`)
      expect(reply.status).toBe(200)
      const stored = await server.store.quotaValues.page(companyId, id('Monthly bookings'), { limit: 100 })
      expect(reply.body).toEqual({
        data: [
          {
            'standard.id': stored[0].id,
            'standard.user': user('owner@acme.example'),
            'standard.period': '2026-01',
            'standard.value': { value: 10000, currency: 'EUR' },
            'standard.source': 'local',
          },
          {
            'standard.id': stored[1].id,
            'standard.user': user('rep@acme.example'),
            'standard.period': '2026-01',
            'standard.value': { value: 8000, currency: 'EUR' },
            'standard.source': 'integration',
          },
          {
            'standard.id': stored[2].id,
            'standard.user': { id: '0123456789abcdef01234567', email: null },
            'standard.period': '2026-02',
            'standard.value': { value: 5000, currency: 'EUR' },
            'standard.source': 'local',
          },
        ],
        meta: { next_start_id: null, has_more: false, next_url: null },
      })
      for (const row of reply.body.data)
        expect(Object.keys(row)).toEqual(['standard.id', 'standard.user', 'standard.period', 'standard.value', 'standard.source'])
    })

    it('serves a percentage as stored (unscaled) and a float as a number, in the period format of the frequency', async () => {
      const percentage = (await get(`/v2/quotas/${id('Quarterly attainment')}/values`)).body.data
      expect(percentage).toEqual([expect.objectContaining({ 'standard.period': '2026-Q1', 'standard.value': 0.85 })])
      const archived = (await get(`/v2/quotas/${id('Old target')}/values`)).body.data
      expect(archived).toEqual([expect.objectContaining({ 'standard.period': '2025', 'standard.value': 3.5 })])
    })

    it('serves semesterly periods, one row per (user, period), in creation order rather than by period or user', async () => {
      const fixture = smallFixture('Periods')
      fixture.quotas = [
        {
          name: 'Halves',
          type: 'float',
          frequency: 'semesterly',
          values: [
            { user: 'rep@periods.example', period: '2026-S2', value: 2 },
            { user: 'owner@periods.example', period: '2026-S1', value: 1 },
            { user: 'rep@periods.example', period: '2026-S1', value: 3 },
          ],
        },
      ]
      const periods = await server.load(fixture)
      const quota = (await idsByName(server, periods.companyId))('Halves')
      const rows = (await server.call(`/v2/quotas/${quota}/values`, { key: periods.apiKey })).body.data
      expect(rows.map((row: any) => [row['standard.user'].email, row['standard.period'], row['standard.value']])).toEqual([
        ['rep@periods.example', '2026-S2', 2],
        ['owner@periods.example', '2026-S1', 1],
        ['rep@periods.example', '2026-S1', 3],
      ])
      const ids = rows.map((row: any) => row['standard.id'])
      expect(ids).toEqual(ids.toSorted())
    })

    it('serves a cell entered as 0, which holds a value, and no row for a cell never entered', async () => {
      const fixture = smallFixture('Zeroes')
      fixture.quotas = [
        {
          name: 'Ramp-up',
          type: 'amount',
          frequency: 'monthly',
          currency: 'EUR',
          values: [
            { user: 'rep@zeroes.example', period: '2026-01', value: 0 },
            { user: 'rep@zeroes.example', period: '2026-03', value: 5000 },
          ],
        },
      ]
      const zeroes = await server.load(fixture)
      const quota = (await idsByName(server, zeroes.companyId))('Ramp-up')
      const rows = (await server.call(`/v2/quotas/${quota}/values`, { key: zeroes.apiKey })).body.data
      expect(rows.map((row: any) => [row['standard.period'], row['standard.value']])).toEqual([
        ['2026-01', { value: 0, currency: 'EUR' }],
        ['2026-03', { value: 5000, currency: 'EUR' }],
      ])
    })

    it('renders every row by the new type after a type change, with no value or modification time changed', async () => {
      const quota = id('Monthly bookings')
      const window = `last_modified_after=2026-01-05T00:00:00Z&last_modified_before=2026-01-05T00:00:00.001Z`
      const before = (await get(`/v2/quotas/${quota}/values`)).body.data
      const atInstant = (await get(`/v2/quotas/${quota}/values?${window}`)).body.data
      expect(atInstant).toHaveLength(1)
      const storedBefore = await server.store.quotaValues.page(companyId, quota, { limit: 100 })

      const changed = await server.call(`/admin/companies/${companyId}/quotas/${quota}`, {
        method: 'PATCH',
        headers: admin,
        body: { type: 'float' },
      })
      expect(changed.status).toBe(200)
      expect(changed.body).toMatchObject({ id: quota, type: 'float' })
      const after = (await get(`/v2/quotas/${quota}/values`)).body.data
      expect(after).toEqual(before.map((row: any) => ({ ...row, 'standard.value': row['standard.value'].value })))
      expect((await get(`/v2/quotas/${quota}/values?${window}`)).body.data).toEqual([{ ...atInstant[0], 'standard.value': 10000 }])
      expect(await server.store.quotaValues.page(companyId, quota, { limit: 100 })).toEqual(storedBefore)

      await server.call(`/admin/companies/${companyId}/quotas/${quota}`, { method: 'PATCH', headers: admin, body: { type: 'amount' } })
      expect((await get(`/v2/quotas/${quota}/values`)).body.data).toEqual(before)
    })
  })

  describe('404s', () => {
    it('answers 404 for a structure of the other kind, a quota, a sandbox, an unknown or malformed id, and another company’s id', async () => {
      const other = await server.load(smallFixture('Hooli'))
      const theirs = await idsByName(server, other.companyId)
      const cases: Array<[string, string]> = [
        [`/v2/reporting/${id('Deal commissions')}/statements`, 'table'],
        [`/v2/reporting/${id('Statements')}/records`, 'table'],
        [`/v2/reporting/${id('Monthly bookings')}/statements`, 'table'],
        [`/v2/reporting/${id('Monthly bookings')}/records`, 'table'],
        [`/v2/reporting/${id('Sandbox statements')}/statements`, 'table'],
        [`/v2/reporting/${id('Sandbox deals')}/records`, 'table'],
        [`/v2/reporting/0123456789abcdef01234567/statements`, 'table'],
        [`/v2/reporting/0123456789abcdef01234567/records`, 'table'],
        [`/v2/reporting/nope/statements`, 'table'],
        [`/v2/reporting/${theirs('Statements')}/statements`, 'table'],
        [`/v2/quotas/${id('Sandbox quota')}/values`, 'quota'],
        [`/v2/quotas/${id('Statements')}/values`, 'quota'],
        [`/v2/quotas/${id('Deal commissions')}/values`, 'quota'],
        [`/v2/quotas/0123456789abcdef01234567/values`, 'quota'],
        [`/v2/quotas/nope/values`, 'quota'],
        [`/v2/quotas/${theirs('Monthly bookings')}/values`, 'quota'],
      ]
      for (const [path, resource] of cases) {
        const reply = await get(path)
        expect(reply.status, path).toBe(404)
        expect(reply.body, path).toEqual(notFound(resource))
      }
    })
  })
})

describe('the quota-type CLI command', () => {
  it('changes a quota’s type in the store of DATA_DIR', async () => {
    const env = { DATA_DIR: tempDataDir() }
    const created = JSON.parse(runCli(['demo', '--users', '5', '--months', '1', '--deals', '1', '--json'], env).stdout)
    const quotas = JSON.parse(runCli(['structures', '--company', created.company_id, '--json'], env).stdout).filter(
      (item: any) => item.type === 'quota' && item.environment === 'live',
    )
    const changed = runCli(['quota-type', '--company', created.company_id, '--quota', quotas[0].id, '--type', 'float', '--json'], env)
    expect(changed.code, changed.stderr).toBe(0)
    expect(JSON.parse(changed.stdout)).toEqual({ id: quotas[0].id, name: quotas[0].name, type: 'float' })
    const store = await openRunStore(env.DATA_DIR)
    try {
      expect((await store.quotas.get(created.company_id, quotas[0].id))?.type).toBe('float')
    } finally {
      await store.close()
    }
    const wrong = runCli(['quota-type', '--company', created.company_id, '--quota', quotas[0].id, '--type', 'bogus'], env)
    expect(wrong.code).toBe(2)
    const unknown = runCli(['quota-type', '--company', created.company_id, '--quota', '0123456789abcdef01234567', '--type', 'float'], env)
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('Not found')
  })
})
