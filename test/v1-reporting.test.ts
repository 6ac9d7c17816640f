import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { newId } from '../src/ids.ts'
import type { DataTable, ReportingStructure, User } from '../src/store/model.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { aCommissionLine, aDataTable, aRecord, minute } from './store/builders.ts'
import { type TestServer, startTestServer } from './helpers/server.ts'
import { v1Fixture } from './helpers/v1-fixture.ts'

describe('deprecated v1 reporting reads', () => {
  let server: TestServer
  let acme: { companyId: string; apiKey: string }
  let tables: DataTable[]
  let structures: ReportingStructure[]
  let users: User[]

  beforeAll(async () => {
    server = await startTestServer()
    acme = await server.load(v1Fixture('Acme'))
    await server.load(v1Fixture('Globex'))
    tables = await server.store.dataTables.list(acme.companyId)
    structures = await server.store.structures.list(acme.companyId)
    users = await server.store.users.list(acme.companyId, { offset: 0, limit: 100 })
  })
  afterAll(() => server.close())

  // Each call a second after the previous one on the injected clock, which the per-company rate limit (80 calls
  // a second) counts on: this file makes more calls than that.
  const get = (path: string) => {
    server.clock.advance(1000)
    return server.call(path, { key: acme.apiKey })
  }
  /** Every row of a v2 structure, following next_url. */
  async function readV2(url: string): Promise<Array<Record<string, any>>> {
    const rows: Array<Record<string, any>> = []
    for (let next: string | null = `${url}?limit=4`; next !== null;) {
      const reply = await get(next.slice(server.url.length))
      expect(reply.status).toBe(200)
      rows.push(...reply.body.data)
      next = reply.body.meta.next_url
    }
    return rows
  }
  const tableId = (key: string, environment = 'live') => tables.find((table) => table.key === key && table.environment === environment)!.id
  const structureId = (name: string) => structures.find((structure) => structure.name === name)!.id
  const user = (email: string) => users.find((candidate) => candidate.email === email)!
  /** The user object of a reporting row, for the small fixture's users. */
  const reportingUser = (email: string) => {
    const stored = user(email)
    return {
      id: stored.id,
      email,
      name: stored.name,
      role: stored.role,
      currency: stored.currency,
      calculation_currency: stored.calculation_currency,
      country: null,
      code: null,
      region: stored.attributes.region ?? null,
      base_salary: stored.attributes.base_salary ?? null,
      base_salary_currency: stored.attributes.base_salary_currency ?? null,
    }
  }
  const notFound = { message: expect.any(String), resource: 'data_table_id', type: 'NotFoundError' }

  describe('GET /v1/reporting', () => {
    it('serves the live statements with their figures, each currency, every custom metric and the dimensions', async () => {
      const reply = await get('/v1/reporting?limit=2')
      expect(reply.status).toBe(200)
      const statements = await server.store.statements.list(acme.companyId, 'live', { offset: 0, limit: 2 })
      expect(reply.body).toEqual({
        count: 6,
        next: `${server.url}/v1/reporting?offset=2&limit=2`,
        data: [
          {
            id: statements[0].id,
            date: '2026-01-31',
            plan: 'Sales 2026',
            user: reportingUser('owner@acme.example'),
            payment: 1200,
            payment_currency: 'EUR',
            target: 1000,
            target_currency: 'EUR',
            target_achievement: 1.2,
            on_target_earning: 1000,
            on_target_earning_currency: 'EUR',
            achievement: 1200,
            achievement_currency: 'EUR',
            attainment: 1.2,
            attainment_currency: null,
            tier: 'gold',
            tier_currency: null,
            bonus: 200,
            bonus_currency: 'EUR',
            region: ['EMEA'],
          },
          {
            id: statements[1].id,
            date: '2026-01-31',
            plan: 'Sales 2026',
            user: reportingUser('rep@acme.example'),
            payment: 800,
            payment_currency: 'USD',
            target: null,
            target_currency: 'USD',
            target_achievement: null,
            on_target_earning: null,
            on_target_earning_currency: 'USD',
            achievement: null,
            achievement_currency: 'USD',
            attainment: 0.8,
            attainment_currency: null,
            tier: 'silver',
            tier_currency: null,
            bonus: null,
            bonus_currency: null,
          },
        ],
      })
    })

    it('serves each custom dimension as an array of strings', async () => {
      const reply = await get('/v1/reporting?offset=3&limit=3')
      expect(reply.body.data.map((row: { region: string[]; teams: string[] }) => [row.region, row.teams])).toEqual([
        [['R1'], ['North', 'South']],
        [['R2'], ['North', 'South']],
        [['R3'], ['North', 'South']],
      ])
      expect(reply.body.data[1]).toMatchObject({ bonus: 1, bonus_currency: 'USD', attainment: 0.6 })
    })

    it('never serves a sandbox statement', async () => {
      const reply = await get('/v1/reporting')
      expect(reply.body.data.map((row: { plan: string }) => row.plan)).not.toContain('Sandbox plan')
      const live = await server.store.statements.list(acme.companyId, 'live', { offset: 0, limit: 100 })
      expect(reply.body.data.map((row: { id: string }) => row.id)).toEqual(live.map((statement) => statement.id))
    })

    it('answers with Deprecation and a Link to the v2 statements route of the live statement structure', async () => {
      const reply = await get('/v1/reporting?limit=1')
      expect(reply.headers.deprecation).toBe('true')
      expect(reply.headers.link).toBe(`<${server.url}/v2/reporting/${structureId('Statements')}/statements>; rel="successor-version"`)
      const discovery = await get('/v2/data-structures')
      const entry = discovery.body.data.find((item: { type: string }) => item.type === 'statement_reporting')
      expect(reply.headers.link).toBe(`<${entry.links.records}>; rel="successor-version"`)
    })

    it("answers the same under GET /v1/reporting/statements (the real documentation's path), with the same headers", async () => {
      const plain = await get('/v1/reporting?limit=2')
      const alias = await get('/v1/reporting/statements?limit=2')
      expect(alias.status).toBe(200)
      expect(alias.body.data).toEqual(plain.body.data)
      expect(alias.body.count).toBe(plain.body.count)
      expect(alias.body.next).toBe(`${server.url}/v1/reporting/statements?offset=2&limit=2`)
      expect(alias.headers.deprecation).toBe('true')
      expect(alias.headers.link).toBe(plain.headers.link)
      const refused = await get('/v1/reporting/statements?offset=x')
      expect(refused.status).toBe(400)
      expect(refused.headers.deprecation).toBe('true')
    })

    it('marks a refused call as deprecated too', async () => {
      const reply = await get('/v1/reporting?limit=2001')
      expect(reply.status).toBe(400)
      expect(reply.headers.deprecation).toBe('true')
      expect(reply.body).toEqual({ count: 1, errors: [{ error: 'ValidationError', resource: 'limit', description: expect.any(String) }] })
    })

    it('marks the refusals of the key and of the rate limit as deprecated too', async () => {
      const missingKey = await server.call('/v1/reporting?limit=1')
      expect(missingKey.status).toBe(401)
      expect(missingKey.headers.deprecation).toBe('true')
      // 90 calls in one second of the injected clock: the rate limit refuses those past 80.
      server.clock.advance(1000)
      const burst = await Promise.all(Array.from({ length: 90 }, () => server.call('/v1/reporting?limit=0', { key: acme.apiKey })))
      const refused = burst.filter((reply) => reply.status === 429)
      expect(refused.length).toBeGreaterThanOrEqual(10)
      for (const reply of refused) expect(reply.headers.deprecation).toBe('true')
      server.clock.advance(1000)
    })

    it('links to discovery when the company has no live statement structure', async () => {
      const fixture = smallFixture('Bare')
      fixture.reporting_structures = fixture.reporting_structures!.filter(
        (structure) => structure.type !== 'statement_reporting' || structure.environment === 'sandbox',
      )
      const bare = await server.load(fixture)
      const reply = await server.call('/v1/reporting', { key: bare.apiKey })
      expect(reply.status).toBe(200)
      expect(reply.body.count).toBe(3)
      expect(reply.headers.link).toBe(`<${server.url}/v2/data-structures>; rel="successor-version"`)
    })

    it('keeps the row of a statement whose user no longer exists, with the user id and null fields', async () => {
      const fixture = smallFixture('Orphans')
      const orphans = await server.load(fixture)
      const ghost = newId()
      const [template] = await server.store.statements.list(orphans.companyId, 'live', { offset: 0, limit: 1 })
      await server.store.statements.insertMany([{ ...template, id: newId(), user_id: ghost }])
      const reply = await server.call('/v1/reporting?offset=3', { key: orphans.apiKey })
      expect(reply.body.data[0].user).toEqual({
        id: ghost,
        email: null,
        name: null,
        role: null,
        currency: null,
        calculation_currency: null,
        country: null,
        code: null,
        region: null,
        base_salary: null,
        base_salary_currency: null,
      })
    })
  })

  describe('GET /v1/reporting/{data_table_id}/records', () => {
    it('serves the commission lines of the table with their user, record and commission', async () => {
      const reply = await get(`/v1/reporting/${tableId('deals')}/records?limit=2`)
      expect(reply.status).toBe(200)
      const lines = await server.store.commissionLines.list(acme.companyId, tableId('deals'), { offset: 0, limit: 2 })
      expect(reply.body).toEqual({
        count: 6,
        next: `${server.url}/v1/reporting/${tableId('deals')}/records?offset=2&limit=2`,
        data: [
          {
            id: lines[0].id,
            date: '2026-01-15',
            plan: 'Sales 2026',
            user: reportingUser('owner@acme.example'),
            record: { id: 'D-1', name: 'First deal' },
            commission: 100,
            commission_currency: 'EUR',
          },
          {
            id: lines[1].id,
            date: '2026-01-20',
            plan: 'Sales 2026',
            user: reportingUser('rep@acme.example'),
            record: { id: 'D-2', name: 'Second deal' },
            commission: 250,
            commission_currency: 'USD',
          },
        ],
      })
    })

    it('answers with Deprecation and a Link to the v2 records route of the record structure over that table', async () => {
      const reply = await get(`/v1/reporting/${tableId('deals')}/records`)
      expect(reply.headers.deprecation).toBe('true')
      expect(reply.headers.link).toBe(`<${server.url}/v2/reporting/${structureId('Deal commissions')}/records>; rel="successor-version"`)
    })

    it("serves the same under the id of the record reporting structure over the table (the real documentation's path)", async () => {
      const byTable = await get(`/v1/reporting/${tableId('deals')}/records?limit=2`)
      const byStructure = await get(`/v1/reporting/${structureId('Deal commissions')}/records?limit=2`)
      expect(byStructure.status).toBe(200)
      expect(byStructure.body.data).toEqual(byTable.body.data)
      expect(byStructure.body.count).toBe(byTable.body.count)
      expect(byStructure.body.next).toBe(`${server.url}/v1/reporting/${structureId('Deal commissions')}/records?offset=2&limit=2`)
      expect(byStructure.headers.deprecation).toBe('true')
      expect(byStructure.headers.link).toBe(
        `<${server.url}/v2/reporting/${structureId('Deal commissions')}/records>; rel="successor-version"`,
      )
    })

    it('reads a table id or a structure id sent in upper case, as v2 reads its ids', async () => {
      const byTable = await get(`/v1/reporting/${tableId('deals')}/records?limit=2`)
      for (const id of [tableId('deals'), structureId('Deal commissions')]) {
        const reply = await get(`/v1/reporting/${id.toUpperCase()}/records?limit=2`)
        expect(reply.status, id).toBe(200)
        expect(reply.body.data, id).toEqual(byTable.body.data)
      }
      expect((await get(`/v2/reporting/${structureId('Deal commissions').toUpperCase()}/records?limit=2`)).status).toBe(200)
    })

    it('answers 404 with the documented body for an unknown id, a malformed one, a sandbox table or structure, and a statement structure', async () => {
      const ids = [
        newId(),
        'not-an-id',
        tableId('deals', 'sandbox'),
        tableId('leads', 'sandbox'),
        structureId('Sandbox deals'),
        structureId('Statements'),
      ]
      for (const id of ids) {
        const reply = await get(`/v1/reporting/${id}/records`)
        expect(reply.status, id).toBe(404)
        expect(reply.body, id).toEqual(notFound)
        expect(reply.headers.deprecation).toBe('true')
      }
    })

    it('serves an empty list for a live table without lines, linking to discovery when no structure shows it', async () => {
      const reply = await get(`/v1/reporting/${tableId('events')}/records`)
      expect(reply.status).toBe(200)
      expect(reply.body).toEqual({ count: 0, data: [], next: null })
      expect(reply.headers.link).toBe(`<${server.url}/v2/data-structures>; rel="successor-version"`)
    })
  })

  describe('consistency with v2', () => {
    it('serves the same statements as v2, with the same user, date, amounts and metrics', async () => {
      const v1 = (await get('/v1/reporting')).body.data
      const v2 = await readV2(`${server.url}/v2/reporting/${structureId('Statements')}/statements`)
      expect(v1).toHaveLength(6)
      expect(v2.map((row) => row['standard.id'])).toEqual(v1.map((row: { id: string }) => row.id))
      v1.forEach((row: Record<string, any>, index: number) => {
        const other = v2[index]
        expect(other['standard.date']).toBe(row.date)
        expect(other['standard.user']).toEqual({ id: row.user.id, email: row.user.email })
        expect(other['standard.total_commission']).toEqual(
          row.payment === null ? null : { value: row.payment, currency: row.payment_currency },
        )
        expect(other['custom.attainment']).toBe(row.attainment)
        expect(other['custom.tier']).toBe(row.tier)
        expect(other['custom.bonus']).toEqual(row.bonus === null ? null : { value: row.bonus, currency: row.bonus_currency })
      })
    })

    it("shows a record's name as v2 does, a multi-valued name field as one string", async () => {
      const table = aDataTable(acme.companyId, {
        key: 'tagged',
        id_field: 'tag_id',
        name_field: 'tags',
        fields: [
          { api_key: 'tag_id', name: 'Id', type: 'string', created_at: minute(0) },
          { api_key: 'tags', name: 'Tags', type: 'multi', created_at: minute(0) },
        ],
      })
      await server.store.dataTables.insert(table)
      const owner = user('owner@acme.example')
      await server.store.commissionLines.insertMany([
        aCommissionLine(acme.companyId, table.id, { user_id: owner.id, record_values: { tag_id: 'T-1', tags: ['a', 'b'] } }),
      ])
      const [row] = (await get(`/v1/reporting/${table.id}/records`)).body.data
      expect(row.record).toEqual({ id: 'T-1', name: 'a;b' })
    })

    it('names a record by the id it is keyed by: "007" in a number id field is not the record 7', async () => {
      const table = aDataTable(acme.companyId, {
        key: 'numbered',
        id_field: 'number',
        name_field: 'number',
        fields: [{ api_key: 'number', name: 'Number', type: 'number', created_at: minute(0) }],
      })
      await server.store.dataTables.insert(table)
      const record = aRecord(acme.companyId, table.id, { external_id: '007', values: { number: 7 } })
      await server.store.records.upsert(acme.companyId, [record])
      const owner = user('owner@acme.example')
      await server.store.commissionLines.insertMany([
        aCommissionLine(acme.companyId, table.id, { user_id: owner.id, record_id: record.id, record_values: { number: 7 } }),
      ])
      const [row] = (await get(`/v1/reporting/${table.id}/records`)).body.data
      expect(row.record).toEqual({ id: '007', name: 7 })
    })

    it('serves the same commission lines as v2 serves through the record structure over the table', async () => {
      const v1 = (await get(`/v1/reporting/${tableId('deals')}/records`)).body.data
      const v2 = await readV2(`${server.url}/v2/reporting/${structureId('Deal commissions')}/records`)
      expect(v1).toHaveLength(6)
      expect(v2.map((row) => row['standard.id'])).toEqual(v1.map((row: { id: string }) => row.id))
      v1.forEach((row: Record<string, any>, index: number) => {
        const other = v2[index]
        expect(other['standard.date']).toBe(row.date)
        expect(other['standard.user']).toEqual({ id: row.user.id, email: row.user.email })
        expect(other['standard.commission_impact']).toEqual({ value: row.commission, currency: row.commission_currency })
        expect(other['datatable.deal_name']).toBe(row.record.name)
      })
    })
  })
})
