import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { demoFixture } from '../src/fixtures/demo.ts'
import type { Fixture } from '../src/fixtures/schema.ts'
import { newId } from '../src/ids.ts'
import type { QuotaValue, Statement } from '../src/store/model.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'
import { V2_TEST_ENV, admin, badParameter, idsByName, walk } from './v2-support.ts'

describe('v2 pagination and filters', () => {
  let server: TestServer
  let fixture: Fixture
  let demo: { companyId: string; apiKey: string }
  let demoId: (name: string) => string
  let emails: Map<string, string>
  let small: { companyId: string; apiKey: string }
  let smallId: (name: string) => string
  /** One path per row endpoint of the small company. */
  let endpoints: string[]

  beforeAll(async () => {
    server = await startTestServer(V2_TEST_ENV)
    fixture = demoFixture({ users: 8, months: 6, deals: 45, seed: 'pages' })
    demo = await server.load(fixture)
    demoId = await idsByName(server, demo.companyId)
    const users = await server.store.users.findByEmails(
      demo.companyId,
      fixture.users.map((user) => user.email),
    )
    emails = new Map([...users.values()].map((user) => [user.id, user.email]))
    small = await server.load(smallFixture())
    smallId = await idsByName(server, small.companyId)
    endpoints = [
      `/v2/reporting/${smallId('Statements')}/statements`,
      `/v2/reporting/${smallId('Deal commissions')}/records`,
      `/v2/quotas/${smallId('Monthly bookings')}/values`,
    ]
  })
  afterAll(() => server.close())

  const statementDates = async (query: string) =>
    (await server.call(`${endpoints[0]}?${query}`, { key: small.apiKey })).body.data.map(
      (row: any) => row['standard.date'] + '/' + row['standard.status'],
    )
  const valueEmails = async (query: string) =>
    (await server.call(`${endpoints[2]}?${query}`, { key: small.apiKey })).body.data.map((row: any) => row['standard.user'].email)
  const structureOf = (type: string) =>
    fixture.reporting_structures!.find((item) => item.type === type && (item.environment ?? 'live') === 'live')!

  describe('a full walk through next_url returns every row once, in id order, as the store holds them', () => {
    it('statements', async () => {
      const { rows, metas } = await walk(
        server,
        demo.apiKey,
        `/v2/reporting/${demoId(structureOf('statement_reporting').name)}/statements?limit=7`,
      )
      // The demo's live statements are its plans' results.
      const expected = await server.store.statements.page(demo.companyId, 'live', { limit: 100_000 })
      expect(expected.length).toBeGreaterThan(20)
      expect(
        rows.map((row) => [row['standard.user'].email, row['standard.date'], row['standard.total_commission'], row['standard.status']]),
      ).toEqual(
        expected.map((statement) => [
          emails.get(statement.user_id),
          statement.date,
          { value: statement.payment, currency: statement.currency },
          statement.status,
        ]),
      )
      const ids = rows.map((row) => row['standard.id'])
      expect(new Set(ids).size).toBe(ids.length)
      expect(ids).toEqual(ids.toSorted())
      expect(metas).toHaveLength(Math.ceil(expected.length / 7))
      metas.slice(0, -1).forEach((meta, index) => {
        expect(meta.has_more).toBe(true)
        expect(meta.next_start_id).toBe(ids[index * 7 + 6])
        const next = new URL(meta.next_url)
        expect([...next.searchParams]).toEqual([
          ['start_id', meta.next_start_id],
          ['limit', '7'],
        ])
      })
      expect(metas.at(-1)).toEqual({ next_start_id: null, has_more: false, next_url: null })
    })

    it('records', async () => {
      const { rows } = await walk(server, demo.apiKey, `/v2/reporting/${demoId(structureOf('record_reporting').name)}/records?limit=4`)
      const [table] = await server.store.dataTables.list(demo.companyId)
      const lines = await server.store.commissionLines.page(demo.companyId, table.id, { limit: 100_000 })
      expect(lines.length).toBeGreaterThanOrEqual(45)
      expect(rows.map((row) => [row['standard.user'].email, row['standard.date'], row['standard.commission_impact']])).toEqual(
        lines.map((line) => [emails.get(line.user_id), line.date, { value: line.commission, currency: line.currency }]),
      )
    })

    it('quota values', async () => {
      for (const quota of fixture.quotas!.filter((item) => (item.environment ?? 'live') === 'live')) {
        const { rows } = await walk(server, demo.apiKey, `/v2/quotas/${demoId(quota.name)}/values?limit=3`)
        const values = quota.values ?? []
        expect(
          rows.map((row) => [row['standard.user'].email ?? row['standard.user'].id, row['standard.period'], row['standard.source']]),
          quota.name,
        ).toEqual(values.map((value) => [value.user ?? value.user_id, value.period, value.source ?? 'local']))
        for (const row of rows) expect([...emails.values(), null]).toContain(row['standard.user'].email)
      }
    })
  })

  it('ends a walk whose last page is exactly full, rather than pointing to an empty page', async () => {
    for (const endpoint of endpoints) {
      const all = (await server.call(`${endpoint}?limit=2000`, { key: small.apiKey })).body.data
      expect(all.length, endpoint).toBeGreaterThanOrEqual(2)
      const whole = await server.call(`${endpoint}?limit=${all.length}`, { key: small.apiKey })
      expect(whole.body.data, endpoint).toHaveLength(all.length)
      expect(whole.body.meta, endpoint).toEqual({ next_start_id: null, has_more: false, next_url: null })
      // The rest after a first row, in a page exactly its size.
      const first = await server.call(`${endpoint}?limit=1`, { key: small.apiKey })
      expect(first.body.meta.has_more, endpoint).toBe(true)
      const rest = await server.call(`${endpoint}?start_id=${first.body.meta.next_start_id}&limit=${all.length - 1}`, { key: small.apiKey })
      expect(rest.body.data, endpoint).toEqual(all.slice(1))
      expect(rest.body.meta, endpoint).toEqual({ next_start_id: null, has_more: false, next_url: null })
    }
  })

  it('returns every row exactly once while rows are being added during the walk', async () => {
    const company = await server.load(smallFixture('Growing'))
    const structure = (await idsByName(server, company.companyId))('Statements')
    const [template] = await server.store.statements.page(company.companyId, 'live', { limit: 1 })
    const added: Statement[] = []
    // Rows are added behind the page just read while more pages follow: each must come in a later page.
    const { rows } = await walk(server, company.apiKey, `/v2/reporting/${structure}/statements?limit=2`, async (page, hasMore) => {
      if (page > 3 || !hasMore) return
      const statements = [0, 1].map((index) => ({ ...template, id: newId(), payment: 100 + page * 2 + index }))
      added.push(...statements)
      await server.store.statements.insertMany(statements)
    })
    const stored = await server.store.statements.page(company.companyId, 'live', { limit: 100 })
    expect(added).toHaveLength(8)
    expect(stored).toHaveLength(3 + added.length)
    expect(rows.map((row) => row['standard.id'])).toEqual(stored.map((statement) => statement.id))
  })

  describe('limit', () => {
    it('defaults to 1000 on statements and records, and next_url carries it', async () => {
      const company = await server.load(smallFixture('Thousand'))
      const ids = await idsByName(server, company.companyId)
      const [statement] = await server.store.statements.page(company.companyId, 'live', { limit: 1 })
      const [line] = await server.store.commissionLines.page(
        company.companyId,
        (await server.store.dataTables.getByKey(company.companyId, 'live', 'deals'))!.id,
        { limit: 1 },
      )
      await server.store.statements.insertMany(Array.from({ length: 1000 }, (_, index) => ({ ...statement, id: newId(), payment: index })))
      await server.store.commissionLines.insertMany(
        Array.from({ length: 1000 }, (_, index) => ({ ...line, id: newId(), commission: index })),
      )
      for (const path of [`/v2/reporting/${ids('Statements')}/statements`, `/v2/reporting/${ids('Deal commissions')}/records`]) {
        const first = await server.call(path, { key: company.apiKey })
        expect(first.body.data, path).toHaveLength(1000)
        expect(first.body.meta.has_more).toBe(true)
        const next = new URL(first.body.meta.next_url)
        expect(next.searchParams.get('limit')).toBe('1000')
        const second = await server.call(next.pathname + next.search, { key: company.apiKey })
        expect(second.body.data.length).toBeGreaterThan(0)
        expect(second.body.data.length).toBeLessThan(1000)
        expect(second.body.data[0]['standard.id'] > first.body.data[999]['standard.id']).toBe(true)
        expect((await server.call(`${path}?limit=2000`, { key: company.apiKey })).body.data.length).toBe(1000 + second.body.data.length)
      }
    })

    it('defaults to 2000 on quota values, and next_url carries it', async () => {
      const company = await server.load(smallFixture('Big'))
      const quota = (await idsByName(server, company.companyId))('Old target')
      const users = [...(await server.store.users.findByEmails(company.companyId, ['owner@big.example'])).values()]
      const values: QuotaValue[] = Array.from({ length: 2001 }, (_, index) => ({
        id: newId(),
        company_id: company.companyId,
        quota_id: quota,
        user_id: users[0].id,
        period: String(3000 + index),
        value: index,
        source: 'local',
        modified_at: '2026-01-01T00:00:00.000Z',
      }))
      await server.store.quotaValues.insertMany(values)
      const first = await server.call(`/v2/quotas/${quota}/values`, { key: company.apiKey })
      expect(first.body.data).toHaveLength(2000)
      expect(first.body.meta.has_more).toBe(true)
      expect(new URL(first.body.meta.next_url).searchParams.get('limit')).toBe('2000')
      const second = await server.call(new URL(first.body.meta.next_url).pathname + new URL(first.body.meta.next_url).search, {
        key: company.apiKey,
      })
      // The fixture's own value comes first: the second page holds the last two inserted.
      expect(second.body.data.map((row: any) => row['standard.value'])).toEqual([1999, 2000])
      expect(second.body.meta).toEqual({ next_start_id: null, has_more: false, next_url: null })
    })

    it('accepts 1 and 2000', async () => {
      for (const path of endpoints) {
        expect((await server.call(`${path}?limit=1`, { key: small.apiKey })).body.data).toHaveLength(1)
        expect((await server.call(`${path}?limit=2000`, { key: small.apiKey })).status).toBe(200)
      }
    })

    it.each(['0', '2001', '-1', '1.5', 'abc', '', '99999999999999999999'])(
      'answers 400 for limit=%s on every endpoint, never capping it',
      async (limit) => {
        for (const path of endpoints) {
          const reply = await server.call(`${path}?limit=${limit}`, { key: small.apiKey })
          expect(reply.status, path).toBe(400)
          expect(reply.body).toEqual(badParameter('limit'))
        }
      },
    )
  })

  describe('start_id', () => {
    it.each(['zz', '0123456789abcdef0123456', '0123456789abcdef012345678', 'g123456789abcdef01234567', ''])(
      'answers 400 for start_id=%s',
      async (startId) => {
        for (const path of endpoints) {
          const reply = await server.call(`${path}?start_id=${startId}`, { key: small.apiKey })
          expect(reply.status, path).toBe(400)
          expect(reply.body).toEqual(badParameter('start_id'))
        }
      },
    )

    it('starts after an id that need not be a row’s, in either case', async () => {
      const path = endpoints[0]
      const all = (await server.call(path, { key: small.apiKey })).body.data.map((row: any) => row['standard.id'])
      const after = (startId: string) => server.call(`${path}?start_id=${startId}`, { key: small.apiKey })
      expect((await after(all[0])).body.data.map((row: any) => row['standard.id'])).toEqual(all.slice(1))
      expect((await after(all[0].toUpperCase())).body.data.map((row: any) => row['standard.id'])).toEqual(all.slice(1))
      expect((await after('0'.repeat(24))).body.data).toHaveLength(all.length)
      expect((await after('f'.repeat(24))).body).toEqual({ data: [], meta: { next_start_id: null, has_more: false, next_url: null } })
    })
  })

  it('ignores an unknown query parameter on every endpoint, and still answers 400 for a known one with a bad value', async () => {
    for (const path of endpoints) {
      const plain = await server.call(`${path}?limit=1`, { key: small.apiKey })
      const busted = await server.call(`${path}?limit=1&_=1717171717&trace_id=abc&last_modified_since=2026-01-01T00:00:00Z`, {
        key: small.apiKey,
      })
      expect(busted.status, path).toBe(200)
      expect(busted.body).toEqual(plain.body)
      expect(new URL(busted.body.meta.next_url).searchParams.has('trace_id')).toBe(false)
      const bad = await server.call(`${path}?_=1717171717&limit=0`, { key: small.apiKey })
      expect(bad.status, path).toBe(400)
      expect(bad.body).toEqual(badParameter('limit'))
      // A number too large for a double is read as Infinity: not an integer a page can have.
      // Nor is a number written otherwise than in decimal digits, which Number() would read.
      for (const limit of ['1e400', '-1e400', '9'.repeat(400), '0x10', ' 5', '1e1', '10.0']) {
        const infinite = await server.call(`${path}?limit=${encodeURIComponent(limit)}`, { key: small.apiKey })
        expect(infinite.status, `${path} ${limit}`).toBe(400)
        expect(infinite.body).toEqual(badParameter('limit'))
      }
    }
    const fields = await server.call(`/v2/data-structures/${smallId('Statements')}/fields?_=1`, { key: small.apiKey })
    expect(fields.status).toBe(200)
    expect((await server.call('/v2/data-structures?cache=no', { key: small.apiKey })).status).toBe(200)
  })

  describe('date filters', () => {
    // The last two: an offset that carries the time out of years 0000 to 9999 in UTC, which compared as text
    // before every date and made a next_url the service refused.
    it.each([
      'yesterday',
      '2026-13-01T00:00:00Z',
      '2026-02-30T00:00:00Z',
      '1700000000',
      '2026-01-01T25:00:00Z',
      '9999-12-31T23:00:00-05:00',
      '0000-01-01T00:00:00+01:00',
    ])('answers 400 for an invalid date-time (%s) in either bound', async (value) => {
      for (const path of endpoints) {
        for (const name of ['last_modified_after', 'last_modified_before']) {
          const reply = await server.call(`${path}?${name}=${encodeURIComponent(value)}`, { key: small.apiKey })
          expect(reply.status, `${path} ${name}`).toBe(400)
          expect(reply.body).toEqual(badParameter(name))
        }
      }
    })

    it('answers 400 for equal bounds and for inverted bounds on every endpoint, whatever their offsets', async () => {
      const cases = [
        ['2026-02-01T10:00:00Z', '2026-02-01T10:00:00Z'],
        ['2026-02-01T12:00:00+02:00', '2026-02-01T10:00:00Z'],
        ['2026-02-02T00:00:00Z', '2026-02-01T00:00:00Z'],
        // Compared with their digits past the millisecond.
        ['2026-02-01T10:00:00.0005Z', '2026-02-01T10:00:00.0005Z'],
        ['2026-02-01T10:00:00.0009Z', '2026-02-01T10:00:00.0001Z'],
      ]
      for (const path of endpoints) {
        for (const [after, before] of cases) {
          const query = `last_modified_after=${encodeURIComponent(after)}&last_modified_before=${encodeURIComponent(before)}`
          const reply = await server.call(`${path}?${query}`, { key: small.apiKey })
          expect(reply.status, `${path} ${query}`).toBe(400)
          expect(reply.body).toEqual(badParameter('last_modified_after'))
        }
      }
    })

    // The small fixture's live statements were modified at 2026-02-01T10:00Z (paid), 2026-02-02T10:00Z (pending), 2026-03-01T10:00Z (validated).

    it('statements and records: both bounds exclusive', async () => {
      expect(await statementDates('last_modified_after=2026-02-02T10:00:00Z')).toEqual(['2026-02-28/validated'])
      expect(await statementDates('last_modified_before=2026-02-02T10:00:00Z')).toEqual(['2026-01-31/paid'])
      expect(await statementDates('last_modified_after=2026-02-01T10:00:00Z&last_modified_before=2026-03-01T10:00:00Z')).toEqual([
        '2026-01-31/pending',
      ])
      expect(await statementDates('last_modified_after=2026-02-02T09:59:59.999Z&last_modified_before=2026-02-02T10:00:00.001Z')).toEqual([
        '2026-01-31/pending',
      ])
      // Digits past the millisecond count: 10:00:00.000 is before 10:00:00.0005, and not after it.
      expect(await statementDates('last_modified_before=2026-02-02T10:00:00.0005Z')).toEqual(['2026-01-31/paid', '2026-01-31/pending'])
      expect(await statementDates('last_modified_after=2026-02-02T09:59:59.9995Z')).toEqual(['2026-01-31/pending', '2026-02-28/validated'])
      expect(await statementDates('last_modified_after=2026-02-02T10:00:00.0005Z')).toEqual(['2026-02-28/validated'])
      // Two bounds within one millisecond differ: no row is between them, and no 400.
      expect(await statementDates('last_modified_after=2026-02-02T10:00:00.0001Z&last_modified_before=2026-02-02T10:00:00.0009Z')).toEqual(
        [],
      )
    })

    it('quota values: both bounds inclusive', async () => {
      // Monthly bookings: the owner's value was modified at 2026-01-05T00:00Z, the others at load time (2026-06-01T00:00Z).
      expect(await valueEmails('last_modified_after=2026-06-01T00:00:00Z')).toEqual(['rep@acme.example', null])
      expect(await valueEmails('last_modified_before=2026-01-05T00:00:00Z')).toEqual(['owner@acme.example'])
      expect(await valueEmails('last_modified_after=2026-01-05T00:00:00Z&last_modified_before=2026-06-01T00:00:00Z')).toEqual([
        'owner@acme.example',
        'rep@acme.example',
        null,
      ])
      // At or after 00:00:00.0005 is from the next millisecond; at or before it, up to 00:00:00.000 included.
      expect(await valueEmails('last_modified_after=2026-06-01T00:00:00.0005Z')).toEqual([])
      expect(await valueEmails('last_modified_before=2026-01-05T00:00:00.0005Z')).toEqual(['owner@acme.example'])
    })

    it('reads a date-time without an offset as UTC, and an offset as given', async () => {
      expect(await statementDates('last_modified_after=2026-02-02T10:00:00')).toEqual(
        await statementDates('last_modified_after=2026-02-02T10:00:00Z'),
      )
      expect(await statementDates(`last_modified_after=${encodeURIComponent('2026-02-02T12:00:00+02:00')}`)).toEqual([
        '2026-02-28/validated',
      ])
    })

    it('names the cause when an offset’s + was written as it is, which a query string reads as a space, or a space joins date and time', async () => {
      for (const offset of ['+02:00', '+0200', '+02']) {
        const reply = await server.call(`${endpoints[0]}?last_modified_after=2026-02-02T12:00:00${offset}`, { key: small.apiKey })
        expect(reply.status, offset).toBe(400)
        expect(reply.body.errors, offset).toEqual([
          expect.objectContaining({ resource: 'last_modified_after', description: expect.stringContaining('%2B') }),
        ])
      }
      // Python's str() of a datetime, as urlencode sends it: a space (+) between date and time, the offset's + as %2B.
      // A time to the minute too, whose ` 12:00` reads as an offset as well.
      for (const query of ['2026-02-02+12%3A00%3A00%2B02%3A00', '2026-02-02%2012:00:00', '2026-02-02+12:00:00+02:00', '2026-02-02+12:00']) {
        const reply = await server.call(`${endpoints[0]}?last_modified_after=${query}`, { key: small.apiKey })
        expect(reply.status, query).toBe(400)
        expect(reply.body.errors[0].description, query).toContain('joined by T, not a space')
      }
      const other = await server.call(`${endpoints[0]}?last_modified_before=2026-02-02T12:00:00%2002:00x`, { key: small.apiKey })
      expect(other.status).toBe(400)
      expect(other.body.errors[0].description).not.toContain('%2B')
    })

    it('carries the applied filters, normalized to UTC, and the limit in next_url', async () => {
      const query = `limit=1&last_modified_after=${encodeURIComponent('2026-01-31T12:00:00+02:00')}&last_modified_before=2026-12-31T00:00:00`
      const reply = await server.call(`${endpoints[0]}?${query}`, { key: small.apiKey })
      const next = new URL(reply.body.meta.next_url)
      expect(next.origin + next.pathname).toBe(server.url + endpoints[0])
      expect(Object.fromEntries(next.searchParams)).toEqual({
        start_id: reply.body.meta.next_start_id,
        limit: '1',
        last_modified_after: '2026-01-31T10:00:00.000Z',
        last_modified_before: '2026-12-31T00:00:00.000Z',
      })
      const { rows } = await walk(server, small.apiKey, `${endpoints[0]}?${query}`)
      expect(rows).toHaveLength(3)
    })

    it('carries digits past the millisecond in next_url, so that every page selects the rows the first did', async () => {
      // Quota values, inclusive bounds within one millisecond of each other: those of 00:00:00.000 (the rep's and the
      // unassigned one, loaded then) are in, and rounded to the millisecond the two bounds would be equal.
      const [, , quota] = endpoints
      const query = 'limit=1&last_modified_after=2026-05-31T23:59:59.9995Z&last_modified_before=2026-06-01T00:00:00.0005Z'
      const first = await server.call(`${quota}?${query}`, { key: small.apiKey })
      expect(first.status).toBe(200)
      expect(Object.fromEntries(new URL(first.body.meta.next_url).searchParams)).toMatchObject({
        last_modified_after: '2026-05-31T23:59:59.999500000Z',
        last_modified_before: '2026-06-01T00:00:00.000500000Z',
      })
      const { rows } = await walk(server, small.apiKey, `${quota}?${query}`)
      expect(rows.map((row: any) => row['standard.user'].email)).toEqual(['rep@acme.example', null])
    })

    it("writes each request's own filters in next_url, also after a request of the same rows written otherwise", async () => {
      const [statements] = endpoints
      const nextFilters = async (query: string) =>
        Object.fromEntries(
          [...new URL((await server.call(`${statements}?${query}`, { key: small.apiKey })).body.meta.next_url).searchParams].filter(
            ([name]) => name.startsWith('last_modified'),
          ),
        )
      expect(await nextFilters('limit=1&last_modified_after=2026-01-01T00:00:00Z')).toEqual({
        last_modified_after: '2026-01-01T00:00:00.000Z',
      })
      expect(await nextFilters('limit=1&last_modified_after=2026-01-01T00:00:00.0005Z')).toEqual({
        last_modified_after: '2026-01-01T00:00:00.000500000Z',
      })
      expect(await nextFilters('limit=1&last_modified_before=9999-12-31T23:59:59.9995Z')).toEqual({
        last_modified_before: '9999-12-31T23:59:59.999500000Z',
      })
      expect(await nextFilters('limit=1')).toEqual({})
    })

    it('keeps every row before an end, and none after a start, that lies past the last millisecond of year 9999', async () => {
      const [statements, , quota] = endpoints
      expect(await statementDates('last_modified_before=9999-12-31T23:59:59.9995Z')).toHaveLength(3)
      const after = await server.call(`${quota}?last_modified_after=9999-12-31T23:59:59.9995Z`, { key: small.apiKey })
      expect(after.body.data).toEqual([])
      expect((await server.call(`${statements}?last_modified_after=9999-12-31T23:59:59.9995Z`, { key: small.apiKey })).body.data).toEqual(
        [],
      )
    })
  })

  describe('incremental sync', () => {
    it('returns a row modified after the last sync when asked with last_modified_after = that instant', async () => {
      const company = await server.load(smallFixture('Syncing'))
      const id = await idsByName(server, company.companyId)
      const patch = (path: string, body: unknown) =>
        server.call(`/admin/companies/${company.companyId}${path}`, { method: 'PATCH', headers: admin, body })
      const get = (path: string) => server.call(path, { key: company.apiKey })
      const paths = {
        statements: `/v2/reporting/${id('Statements')}/statements`,
        records: `/v2/reporting/${id('Deal commissions')}/records`,
        values: `/v2/quotas/${id('Monthly bookings')}/values`,
      }
      for (const path of Object.values(paths)) expect((await get(path)).body.data.length).toBeGreaterThan(1)

      server.clock.advance(60_000)
      const lastSync = server.clock.now().toISOString()
      for (const path of Object.values(paths)) expect((await get(`${path}?last_modified_after=${lastSync}`)).body.data).toEqual([])

      server.clock.advance(1000)
      const [statement] = (await get(paths.statements)).body.data.slice(1)
      const [line] = (await get(paths.records)).body.data
      const [value] = (await get(paths.values)).body.data.slice(2)
      expect((await patch(`/statements/${statement['standard.id']}`, { payment: 999 })).status).toBe(200)
      expect((await patch(`/commission-lines/${line['standard.id']}`, { commission: 7 })).status).toBe(200)
      expect((await patch(`/quota-values/${value['standard.id']}`, { value: 1 })).status).toBe(200)

      expect((await get(`${paths.statements}?last_modified_after=${lastSync}`)).body.data).toEqual([
        { ...statement, 'standard.total_commission': { value: 999, currency: statement['standard.total_commission'].currency } },
      ])
      expect((await get(`${paths.records}?last_modified_after=${lastSync}`)).body.data).toEqual([
        { ...line, 'standard.commission_impact': { ...line['standard.commission_impact'], value: 7 } },
      ])
      expect((await get(`${paths.values}?last_modified_after=${lastSync}`)).body.data).toEqual([
        { ...value, 'standard.value': { ...value['standard.value'], value: 1 } },
      ])
    })

    it('lets the admin routes set a modification time explicitly, which the filters then see', async () => {
      const path = endpoints[0]
      const [first] = (await server.call(path, { key: small.apiKey })).body.data
      const reply = await server.call(`/admin/companies/${small.companyId}/statements/${first['standard.id']}`, {
        method: 'PATCH',
        headers: admin,
        body: { modified_at: '2030-01-01T00:00:00+01:00' },
      })
      expect(reply.status).toBe(200)
      expect(reply.body.modified_at).toBe('2029-12-31T23:00:00.000Z')
      const later = await server.call(`${path}?last_modified_after=2029-12-31T22:59:59Z`, { key: small.apiKey })
      expect(later.body.data).toEqual([first])
      await server.call(`/admin/companies/${small.companyId}/statements/${first['standard.id']}`, {
        method: 'PATCH',
        headers: admin,
        body: { modified_at: '2026-02-01T10:00:00Z' },
      })
    })
  })
})
