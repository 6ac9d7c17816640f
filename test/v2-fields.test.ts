import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../src/clock.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import { newId } from '../src/ids.ts'
import { fieldSchemaOf } from '../src/v2/fields.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'
import { openRunStore } from './helpers/test-store.ts'
import { V2_TEST_ENV, admin, idsByName, notFound } from './v2-support.ts'

const STANDARD = '2020-01-01T00:00:00.000Z'
const LOADED = '2026-06-01T00:00:00.000Z'
const AMOUNT_PROPERTIES = { value: { type: 'number', required: true }, currency: { type: 'string', required: true } }
const USER_PROPERTIES = { id: { type: 'string', required: true }, email: { type: 'string', required: true } }
const plain = { currencies: null, enum_values: null, properties: null }
const standard = (key: string, name: string, rest: object) => ({
  api_key: `standard.${key}`,
  name,
  origin: 'standard',
  created_at: STANDARD,
  ...plain,
  ...rest,
})
const datatable = (fieldKey: string, name: string, rest: object) => ({
  api_key: `datatable.${fieldKey}`,
  name,
  origin: 'datatable',
  created_at: LOADED,
  ...plain,
  ...rest,
})
const ID = standard('id', 'Id', { type: 'string', format: null })
const USER = standard('user', 'User', { type: 'object', format: 'user_reference', properties: USER_PROPERTIES })

describe('GET /v2/data-structures/{table_id}/fields', () => {
  let server: TestServer
  let key: string
  let companyId: string
  let id: (name: string) => string

  beforeAll(async () => {
    server = await startTestServer(V2_TEST_ENV, {}, { transport: 'inject' })
    ;({ apiKey: key, companyId } = await server.load(smallFixture()))
    id = await idsByName(server, companyId)
  })
  afterAll(() => server.close())

  const fields = (tableId: string) => server.call(`/v2/data-structures/${tableId}/fields`, { key })
  const hashOf = async (tableId: string) => (await fields(tableId)).body.schema_hash as string
  const patch = (path: string, body: unknown) =>
    server.call(`/admin/companies/${companyId}${path}`, { method: 'PATCH', headers: admin, body })

  it('describes a statement structure: the standard fields, then its custom metrics in order', async () => {
    const reply = await fields(id('Statements'))
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({
      schema_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
      count: 8,
      fields: [
        ID,
        USER,
        standard('date', 'Date', { type: 'string', format: 'date' }),
        standard('total_commission', 'Total commission', {
          type: 'object',
          format: 'currency',
          currencies: ['EUR', 'USD'],
          properties: AMOUNT_PROPERTIES,
        }),
        standard('status', 'Status', { type: 'string', format: 'enum', enum_values: ['paid', 'pending', 'validated'] }),
        {
          api_key: 'custom.attainment',
          name: 'Attainment',
          type: 'number',
          format: 'percentage',
          origin: 'custom',
          created_at: LOADED,
          ...plain,
        },
        {
          api_key: 'custom.tier',
          name: 'Tier',
          type: 'string',
          format: 'enum',
          origin: 'custom',
          created_at: LOADED,
          ...plain,
          enum_values: ['bronze', 'silver', 'gold'],
        },
        {
          api_key: 'custom.bonus',
          name: 'Bonus',
          type: 'object',
          format: 'currency',
          origin: 'custom',
          created_at: LOADED,
          currencies: ['EUR', 'USD'],
          enum_values: null,
          properties: AMOUNT_PROPERTIES,
        },
      ],
    })
  })

  it('describes a record structure: standard fields, then its data-table fields, then its metrics', async () => {
    const reply = await fields(id('Deal commissions'))
    expect(reply.status).toBe(200)
    expect(reply.body.count).toBe(8)
    expect(reply.body.fields).toEqual([
      ID,
      USER,
      standard('commission_impact', 'Commission impact', {
        type: 'object',
        format: 'currency',
        currencies: ['EUR', 'USD'],
        properties: AMOUNT_PROPERTIES,
      }),
      standard('date', 'Date', { type: 'string', format: 'date' }),
      datatable('deal_name', 'Deal name', { type: 'string', format: null }),
      datatable('amount', 'Amount', { type: 'object', format: 'currency', currencies: ['EUR', 'USD'], properties: AMOUNT_PROPERTIES }),
      datatable('deal_types', 'Deal types', { type: 'string', format: null }),
      expect.objectContaining({ api_key: 'custom.bonus', origin: 'custom', type: 'object', format: 'currency' }),
    ])
  })

  it.each([
    ['Monthly bookings', 'monthly', { type: 'object', format: 'currency', currencies: ['EUR'], properties: AMOUNT_PROPERTIES }],
    ['Quarterly attainment', 'quarterly', { type: 'number', format: 'percentage' }],
    ['Old target', 'annually', { type: 'number', format: 'float' }],
  ])('describes the quota %s: five standard fields, frequency on standard.period only', async (name, frequency, value) => {
    const reply = await fields(id(name))
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({
      schema_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
      count: 5,
      fields: [
        ID,
        USER,
        standard('period', 'Period', { type: 'string', format: 'period', frequency }),
        standard('value', 'Value', value),
        standard('source', 'Source', { type: 'string', format: 'enum', enum_values: ['local', 'integration'] }),
      ],
    })
    for (const field of reply.body.fields.filter((item: any) => item.api_key !== 'standard.period'))
      expect(field).not.toHaveProperty('frequency')
  })

  it('gives the same standard fields and hash to every company with the same configuration', async () => {
    const other = await server.load(smallFixture('Globex'))
    const otherId = await idsByName(server, other.companyId)
    const theirs = await server.call(`/v2/data-structures/${otherId('Statements')}/fields`, { key: other.apiKey })
    expect(theirs.body).toEqual((await fields(id('Statements'))).body)
  })

  it('lists on an amount metric without configured currencies the currencies its values are in', async () => {
    const other = await server.load(smallFixture('Unconfigured'))
    const ids = await idsByName(server, other.companyId)
    const reply = await server.call(`/admin/companies/${other.companyId}/custom-metrics/bonus`, {
      method: 'PATCH',
      headers: admin,
      body: { currencies: null },
    })
    expect(reply.status).toBe(200)
    const bonusOf = async (structure: string) =>
      (await server.call(`/v2/data-structures/${ids(structure)}/fields`, { key: other.apiKey })).body.fields.find(
        (field: any) => field.api_key === 'custom.bonus',
      )
    // Statements: only the owner's, in EUR, has a bonus; lines: only D-1's, in EUR.
    expect(await bonusOf('Statements')).toMatchObject({ type: 'object', format: 'currency', currencies: ['EUR'] })
    expect(await bonusOf('Deal commissions')).toMatchObject({ type: 'object', format: 'currency', currencies: ['EUR'] })
  })

  it('lists on an amount metric its configured currencies, then the others its values are in', async () => {
    const other = await server.load(smallFixture('Configured'))
    const ids = await idsByName(server, other.companyId)
    const reply = await server.call(`/admin/companies/${other.companyId}/custom-metrics/bonus`, {
      method: 'PATCH',
      headers: admin,
      body: { currencies: ['USD'] },
    })
    expect(reply.status).toBe(200)
    const schema = await server.call(`/v2/data-structures/${ids('Statements')}/fields`, { key: other.apiKey })
    // The owner's statement has a bonus in EUR, which the configuration does not name.
    expect(schema.body.fields.find((field: any) => field.api_key === 'custom.bonus')).toMatchObject({ currencies: ['USD', 'EUR'] })
  })

  it('pins the hash of a quota schema, which depends on nothing but its type, frequency and currency', async () => {
    // A golden value: the hash must not drift across versions, restarts or adapters. (It changed once, on purpose,
    // when user references became required and amounts listed their currencies.)
    expect(await hashOf(id('Monthly bookings'))).toBe('b45fd721ba2ca5305d9c0c54e5a3b22789e2b5258b46566e41bfff7d89fdead5')
  })

  it('keeps the same hash when the store is reopened (a restart)', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'v2-fields-'))
    try {
      const first = await openRunStore(directory)
      const loaded = await loadFixture(first, new ManualClock(), smallFixture())
      const structures = await first.structures.list(loaded.company_id)
      const before = await Promise.all(
        structures.filter((item) => item.environment === 'live').map((item) => fieldSchemaOf(first, loaded.company_id, item.id)),
      )
      await first.close()
      const again = await openRunStore(directory)
      const after = await Promise.all(
        structures.filter((item) => item.environment === 'live').map((item) => fieldSchemaOf(again, loaded.company_id, item.id)),
      )
      await again.close()
      expect(after).toEqual(before)
      expect(new Set(after.map((schema) => schema.schema_hash)).size).toBe(2)
    } finally {
      rmSync(directory, { recursive: true, force: true })
    }
  })

  it('answers 404 for a sandbox structure or quota, an unknown id, a malformed id, and another company’s id', async () => {
    const other = await server.load(smallFixture('Initech'))
    const theirs = (await idsByName(server, other.companyId))('Statements')
    for (const tableId of [
      id('Sandbox statements'),
      id('Sandbox deals'),
      id('Sandbox quota'),
      '0123456789abcdef01234567',
      'not-an-id',
      theirs,
    ]) {
      const reply = await fields(tableId)
      expect(reply.status, tableId).toBe(404)
      expect(reply.body).toEqual(notFound('data_structure'))
    }
  })

  it('accepts an id in upper case', async () => {
    expect((await fields(id('Statements').toUpperCase())).body).toEqual((await fields(id('Statements'))).body)
  })

  describe('schema_hash changes with the schema, and only with it', () => {
    it('changes when a metric is added to or removed from a structure, and comes back when restored', async () => {
      const structure = id('Statements')
      const original = await hashOf(structure)
      expect((await patch(`/reporting-structures/${structure}`, { metrics: ['attainment', 'tier'] })).status).toBe(200)
      const removed = await hashOf(structure)
      expect((await fields(structure)).body.count).toBe(7)
      expect((await patch(`/reporting-structures/${structure}`, { metrics: ['attainment', 'tier', 'bonus'] })).status).toBe(200)
      expect(await hashOf(structure)).toBe(original)
      expect(removed).not.toBe(original)
    })

    it('changes when a data-table field is added or removed, or the fields are reordered', async () => {
      const structure = id('Deal commissions')
      const original = await hashOf(structure)
      await patch(`/reporting-structures/${structure}`, { fields: ['deal_name', 'amount', 'deal_types', 'deal_id'] })
      const added = await hashOf(structure)
      await patch(`/reporting-structures/${structure}`, { fields: ['amount', 'deal_name', 'deal_types'] })
      const reordered = await hashOf(structure)
      await patch(`/reporting-structures/${structure}`, { fields: ['deal_name', 'amount', 'deal_types'] })
      expect(await hashOf(structure)).toBe(original)
      expect(new Set([original, added, reordered]).size).toBe(3)
    })

    it('changes when a custom metric is modified (its name, its kind, its enum values)', async () => {
      const structure = id('Statements')
      const original = await hashOf(structure)
      const seen = new Set([original])
      for (const change of [{ name: 'Tier level' }, { enum_values: ['bronze', 'silver', 'gold', 'platinum'] }, { kind: 'text' }]) {
        expect((await patch('/custom-metrics/tier', change)).status).toBe(200)
        const hash = await hashOf(structure)
        expect(seen.has(hash), JSON.stringify(change)).toBe(false)
        seen.add(hash)
      }
      await patch('/custom-metrics/tier', { name: 'Tier', kind: 'enum', enum_values: ['bronze', 'silver', 'gold'] })
      expect(await hashOf(structure)).toBe(original)
    })

    it('changes when a quota’s type changes', async () => {
      const quota = id('Quarterly attainment')
      const original = await hashOf(quota)
      expect((await patch(`/quotas/${quota}`, { type: 'float' })).status).toBe(200)
      const float = await hashOf(quota)
      expect((await fields(quota)).body.fields[3]).toMatchObject({ api_key: 'standard.value', type: 'number', format: 'float' })
      expect((await patch(`/quotas/${quota}`, { type: 'percentage' })).status).toBe(200)
      expect(await hashOf(quota)).toBe(original)
      expect(float).not.toBe(original)
    })

    it('does not change when rows change within the currencies in use', async () => {
      const structure = id('Statements')
      const original = await hashOf(structure)
      const [statement] = await server.store.statements.page(companyId, 'live', { limit: 1 })
      expect((await patch(`/statements/${statement.id}`, { payment: 4321 })).status).toBe(200)
      expect(await hashOf(structure)).toBe(original)
    })

    it('changes when an amount comes in a currency no value used before, which its currencies then list', async () => {
      const other = await server.load(smallFixture('Sterling'))
      const structure = (await idsByName(server, other.companyId))('Statements')
      const read = () => server.call(`/v2/data-structures/${structure}/fields`, { key: other.apiKey })
      const before = (await read()).body
      const [statement] = await server.store.statements.page(other.companyId, 'live', { limit: 1 })
      await server.store.statements.insertMany([{ ...statement, id: newId(), currency: 'GBP' }])
      const after = (await read()).body
      expect(after.schema_hash).not.toBe(before.schema_hash)
      expect(after.fields[3]).toMatchObject({ api_key: 'standard.total_commission', currencies: ['EUR', 'GBP', 'USD'] })
    })
  })
})
