import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { newId } from '../src/ids.ts'
import type { DataTable } from '../src/store/model.ts'
import { type KitServer, startKitServer } from './helpers/kit-server.ts'
import { call, type TestServer, startTestServer } from './helpers/server.ts'
import { v1Fixture } from './helpers/v1-fixture.ts'

describe('GET /v1/tables/{data_table_key}/records', () => {
  let server: TestServer
  let acme: { companyId: string; apiKey: string }
  let globex: { companyId: string; apiKey: string }
  let tables: DataTable[]

  beforeAll(async () => {
    server = await startTestServer()
    acme = await server.load(v1Fixture('Acme'))
    globex = await server.load(v1Fixture('Globex'))
    tables = await server.store.dataTables.list(acme.companyId)
  })
  afterAll(() => server.close())

  const get = (path: string) => server.call(path, { key: acme.apiKey })
  const notFound = { message: expect.any(String), resource: 'data_table_key', type: 'NotFoundError' }

  it('serves each record with its configured fields, an amount with its _currency, a multi-valued field as one ;-separated string', async () => {
    const reply = await get('/v1/tables/deals/records?limit=2')
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({
      count: 6,
      next: `${server.url}/v1/tables/deals/records?offset=2&limit=2`,
      data: [
        { deal_id: 'D-1', deal_name: 'First deal', amount: 1000, amount_currency: 'EUR', deal_types: 'new;upsell' },
        { deal_id: 'D-2', deal_name: 'Second deal', amount: 2500, amount_currency: 'USD', deal_types: 'renewal' },
      ],
    })
  })

  it('serves every field type: date-times as ISO 8601 in UTC, dates, booleans, numbers; a field without a value is null', async () => {
    const reply = await get('/v1/tables/events/records')
    expect(reply.body).toEqual({
      count: 2,
      next: null,
      data: [
        {
          event_id: 7,
          title: 'Kick-off',
          happened_at: '2026-01-15T08:30:00.000Z',
          day: '2026-01-15',
          billable: true,
          fee: 12.5,
          fee_currency: 'USD',
          tags: 'a;b',
        },
        { event_id: 8, title: 'Sparse', happened_at: null, day: null, billable: null, fee: null, fee_currency: null, tags: null },
      ],
    })
    expect(Object.keys(reply.body.data[0])).toEqual(['event_id', 'title', 'happened_at', 'day', 'billable', 'fee', 'fee_currency', 'tags'])
  })

  it('applies manual overrides on top of the imported values', async () => {
    const events = tables.find((table) => table.key === 'events')!
    await server.store.records.upsert(acme.companyId, [
      {
        id: newId(),
        company_id: acme.companyId,
        table_id: events.id,
        external_id: '9',
        values: { event_id: 9, title: 'Imported title', fee: { value: 1, currency: 'EUR' }, tags: ['x'] },
        overrides: { title: 'Title set by hand', fee: { value: 2, currency: 'GBP' } },
        created_at: '2026-06-01T00:00:00.000Z',
        modified_at: '2026-06-01T00:00:00.000Z',
      },
    ])
    const reply = await get('/v1/tables/events/records?offset=2')
    expect(reply.body.data).toEqual([
      { event_id: 9, title: 'Title set by hand', happened_at: null, day: null, billable: null, fee: 2, fee_currency: 'GBP', tags: 'x' },
    ])
  })

  it('answers 404 with the documented body for an unknown key', async () => {
    const reply = await get('/v1/tables/nope/records')
    expect(reply.status).toBe(404)
    expect(reply.body).toEqual(notFound)
  })

  it('answers 404 for a sandbox table, and never serves sandbox records under a live key', async () => {
    expect(tables.find((table) => table.key === 'leads')!.environment).toBe('sandbox')
    const reply = await get('/v1/tables/leads/records')
    expect(reply.status).toBe(404)
    expect(reply.body).toEqual(notFound)
    const deals = await get('/v1/tables/deals/records')
    expect(deals.body.data.map((record: { deal_id: string }) => record.deal_id)).toEqual(['D-1', 'D-2', 'D-3', 'D-4', 'D-5', 'D-6'])
  })

  it('checks the paging parameters before the key: a bad offset is a 400 even for an unknown table', async () => {
    const reply = await get('/v1/tables/nope/records?offset=9223372036854775808')
    expect(reply.status).toBe(400)
    expect(reply.body).toEqual({ count: 1, errors: [{ error: 'ValidationError', resource: 'offset', description: expect.any(String) }] })
  })

  it("never serves another company's table, even under the same key", async () => {
    const reply = await server.call('/v1/tables/events/records', { key: globex.apiKey })
    expect(reply.body.count).toBe(2)
    expect(reply.body.data.map((record: { event_id: number }) => record.event_id)).toEqual([7, 8])
  })
})

describe('a number id field, as its records are keyed', () => {
  let server: KitServer
  afterAll(() => server.close())

  it('shows an id written otherwise than as its number as it was written, so that a fetched record sent back updates that record', async () => {
    server = await startKitServer()
    const created = await server.admin('/admin/companies', { method: 'POST', body: v1Fixture('Keyed') })
    expect(created.status).toBe(201)
    const { company_id: companyId, api_key: key } = created.body
    const upsert = async (records: unknown[]) => {
      const sent = await call(`${server.url}/v1/tables/events/records/bulk`, { method: 'POST', key, body: records })
      expect(sent.status).toBe(200)
      expect((await server.admin(`/admin/companies/${companyId}/imports/drain`, { method: 'POST' })).status).toBe(200)
    }
    const list = async () => (await call(`${server.url}/v1/tables/events/records`, { key })).body

    await upsert([
      { event_id: '007', title: 'Zeros' },
      { event_id: '12345678901234567', title: 'Past 2^53' },
      { event_id: '9', title: 'Nine' },
    ])
    const fetched = await list()
    expect(fetched.data.map((record: { event_id: unknown }) => record.event_id)).toEqual([7, 8, '007', '12345678901234567', 9])

    await upsert(fetched.data.map((record: { title: string }) => ({ ...record, title: `${record.title}, again` })))
    const again = await list()
    expect(again.count).toBe(5)
    expect(again.data.map((record: { event_id: unknown; title: string }) => [record.event_id, record.title])).toEqual([
      [7, 'Kick-off, again'],
      [8, 'Sparse, again'],
      ['007', 'Zeros, again'],
      ['12345678901234567', 'Past 2^53, again'],
      [9, 'Nine, again'],
    ])
  })
})
