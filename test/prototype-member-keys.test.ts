import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Fixture } from '../src/fixtures/schema.ts'
import { ImportWorker } from '../src/imports/worker.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'
import { idsByName } from './v2-support.ts'

/**
 * API keys are chosen by the company: any name but `__proto__`, `constructor` and `prototype` (the fixture
 * schema refuses those), so also the names of Object.prototype's members. A plain object indexed by such a key
 * reads the inherited member where the company has no value.
 */
function prototypeKeysFixture(): Fixture {
  const [owner, bob] = ['owner@protokeys.example', 'bob@protokeys.example']
  return {
    company: { name: 'Protokeys', default_currency: 'EUR' },
    user_attributes: [
      { api_key: 'toString', name: 'To string', type: 'string' },
      { api_key: 'valueOf', name: 'Value of', type: 'amount' },
    ],
    users: [
      { email: owner, name: 'Olive Owner', role: 'admin', currency: 'EUR' },
      { email: bob, name: 'Bob', currency: 'EUR' },
    ],
    custom_metrics: [
      { api_key: 'valueOf', name: 'Value of', kind: 'amount' },
      { api_key: 'hasOwnProperty', name: 'Has own property', kind: 'text' },
    ],
    data_tables: [
      {
        key: 'deals',
        name: 'Deals',
        id_field: 'deal_id',
        name_field: 'valueOf',
        fields: [
          { api_key: 'deal_id', name: 'Deal id', type: 'string' },
          { api_key: 'valueOf', name: 'Value of', type: 'string' },
          { api_key: 'toString', name: 'To string', type: 'amount' },
        ],
        records: [{ deal_id: 'D-1', toString: 5, toString_currency: 'USD' }, { deal_id: 'D-2' }],
      },
    ],
    reporting_structures: [
      { name: 'Statements', type: 'statement_reporting', metrics: ['valueOf', 'hasOwnProperty'] },
      { name: 'Deal commissions', type: 'record_reporting', data_table: 'deals', metrics: ['valueOf'], fields: ['toString', 'valueOf'] },
    ],
    statements: [
      {
        user: owner,
        date: '2026-01-31',
        plan: 'Sales 2026',
        status: 'paid',
        currency: 'EUR',
        payment: 100,
        metrics: { valueOf: { value: 5, currency: 'USD' } },
        dimensions: { toString: ['North'] },
      },
    ],
    commission_lines: [
      { data_table: 'deals', record: 'D-1', user: owner, plan: 'Sales 2026', date: '2026-01-15', commission: 10, currency: 'EUR' },
      { data_table: 'deals', record: 'D-2', user: owner, plan: 'Sales 2026', date: '2026-01-20', commission: 20, currency: 'EUR' },
    ],
    api_keys: [{ user: owner }],
  }
}

describe('API keys named like Object.prototype members (valueOf, toString, hasOwnProperty)', () => {
  let server: TestServer
  let key: string
  let id: (name: string) => string
  let tableId: string

  beforeAll(async () => {
    server = await startTestServer()
    const loaded = await server.load(prototypeKeysFixture())
    key = loaded.apiKey
    id = await idsByName(server, loaded.companyId)
    tableId = (await server.store.dataTables.list(loaded.companyId))[0].id
  })
  afterAll(() => server.close())

  const get = async (path: string) => {
    const reply = await server.call(path, { key })
    expect(reply.status, reply.text).toBe(200)
    return reply.body
  }

  /** A structure's field descriptors by api_key. */
  const fieldsOf = async (structure: string) => {
    const reply = await server.call(`/v2/data-structures/${id(structure)}/fields`, { key })
    expect(reply.status, reply.text).toBe(200)
    return new Map((reply.body.fields as { api_key: string }[]).map((field) => [field.api_key, field]))
  }

  it('GET /v2/data-structures/{id}/fields describes the metrics of a statement structure, with the currencies in use', async () => {
    const fields = await fieldsOf('Statements')
    expect(fields.get('custom.valueOf')).toMatchObject({ type: 'object', format: 'currency', currencies: ['USD'] })
    expect(fields.get('custom.hasOwnProperty')).toMatchObject({ type: 'string', format: null })
  })

  it('GET /v2/data-structures/{id}/fields describes the fields and metrics of a record structure', async () => {
    const fields = await fieldsOf('Deal commissions')
    expect(fields.get('datatable.toString')).toMatchObject({ type: 'object', format: 'currency', currencies: ['USD'] })
    expect(fields.get('datatable.valueOf')).toMatchObject({ type: 'string', format: null })
    // No line has a value for the metric: no currency is in use.
    expect(fields.get('custom.valueOf')).toMatchObject({ type: 'object', format: 'currency', currencies: [] })
  })

  it('GET /v1/users shows an attribute written by PUT /v1/users/bulk, and null for one a user has no value for', async () => {
    const reply = await server.call('/v1/users/bulk', {
      method: 'PUT',
      key,
      body: { data: [{ email: 'bob@protokeys.example', toString: 'NEW', valueOf: 12, valueOf_currency: 'EUR' }] },
    })
    expect(reply.status, reply.text).toBe(200)
    const worker = new ImportWorker({ store: server.store, clock: server.clock, owner: 'test-worker' })
    expect(await worker.drain()).toBe(1)
    await worker.stop()
    const users = (await get('/v1/users')).data
    expect(users[0]).toMatchObject({ email: 'owner@protokeys.example', toString: null, valueOf: null, valueOf_currency: null })
    expect(users[1]).toMatchObject({ email: 'bob@protokeys.example', toString: 'NEW', valueOf: 12, valueOf_currency: 'EUR' })
  })

  it('GET /v1/reporting shows every custom metric and dimension, and the user attributes', async () => {
    const [row] = (await get('/v1/reporting')).data
    expect(row).toMatchObject({
      valueOf: 5,
      valueOf_currency: 'USD',
      hasOwnProperty: null,
      hasOwnProperty_currency: null,
      toString: ['North'],
      user: { email: 'owner@protokeys.example', toString: null, valueOf: null, valueOf_currency: null },
    })
  })

  it('GET /v1/reporting/{data_table_id}/records shows a null name for a record without one', async () => {
    const rows = (await get(`/v1/reporting/${tableId}/records`)).data
    expect(rows.map((row: { record: unknown }) => row.record)).toStrictEqual([
      { id: 'D-1', name: null },
      { id: 'D-2', name: null },
    ])
  })

  it('GET /v1/tables/{key}/records shows every configured field, null when the record has no value', async () => {
    expect((await get('/v1/tables/deals/records')).data).toStrictEqual([
      { deal_id: 'D-1', valueOf: null, toString: 5, toString_currency: 'USD' },
      { deal_id: 'D-2', valueOf: null, toString: null, toString_currency: null },
    ])
  })
})
