import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../src/clock.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import type { Fixture } from '../src/fixtures/schema.ts'
import { newId } from '../src/ids.ts'
import { type Store, StoreBusyError, StoreFullError, StoreUnconfirmedError } from '../src/store/port.ts'
import { structureColumns } from '../src/v2/fields.ts'
import { renderStatements, renderStatementsAhead, statementTexts } from '../src/v2/statement-texts.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'
import { openTestStore } from './helpers/test-store.ts'
import { aStatement } from './store/builders.ts'
import { V2_TEST_ENV, admin, idsByName, walk } from './v2-support.ts'

/**
 * v2 statement rows rendered ahead of reads (src/v2/statement-texts.ts), over HTTP and in the store: a fixture
 * load and every admin edit leave renderings for the key of the first live statement structure; a page is the
 * same, byte for byte, whether its rows come from renderings or are rendered as they are read; and no edit is
 * ever followed by a stale row. Each test loads a company of its own.
 */

/** The metrics of the main structure, in its order. */
const ALL_METRICS = ['attainment', 'tier', 'bonus', 'fee', 'note', 'closed_on', 'score']
/** The metrics of the second live statement structure: a subset, in another order. */
const NARROW_METRICS = ['score', 'note', 'bonus']
const NOTE_WITH_ESCAPES = 'say "hi" \\ back\\slash\n\ttab \u0001 \u2028 </script>'
const END = { next_start_id: null, has_more: false, next_url: null }

function renderingFixture(name: string): Fixture {
  const domain = `${name.toLowerCase()}.example`
  return {
    company: { name, default_currency: 'EUR' },
    users: [
      { email: `owner@${domain}`, name: 'Olive Owner', currency: 'EUR' },
      { email: `rep@${domain}`, name: 'Rita Rep', currency: 'USD' },
      { email: `o"dd\\y@${domain}`, name: 'Odd Escapes' },
      { email: `josé.日本@${domain}`, name: 'José' },
    ],
    custom_metrics: [
      { api_key: 'attainment', name: 'Attainment', kind: 'percentage' },
      { api_key: 'tier', name: 'Tier', kind: 'enum', enum_values: ['bronze', 'silver', 'gold'] },
      { api_key: 'bonus', name: 'Bonus', kind: 'amount', currencies: ['EUR', 'USD'] },
      { api_key: 'fee', name: 'Fee', kind: 'amount' },
      { api_key: 'note', name: 'Note', kind: 'text' },
      { api_key: 'closed_on', name: 'Closed on', kind: 'date' },
      { api_key: 'score', name: 'Score', kind: 'float' },
    ],
    reporting_structures: [
      // Listed first, but of the sandbox: renderings are for the first *live* statement structure.
      { name: 'Sandbox statements', type: 'statement_reporting', environment: 'sandbox', metrics: ['tier'] },
      { name: 'Statements', type: 'statement_reporting', metrics: ALL_METRICS },
      { name: 'Narrow', type: 'statement_reporting', metrics: NARROW_METRICS },
    ],
    statements: [
      {
        user: `owner@${domain}`,
        date: '2026-01-31',
        plan: 'P',
        status: 'paid',
        currency: 'EUR',
        payment: 1200,
        metrics: {
          attainment: 1.2,
          tier: 'gold',
          bonus: { value: 200, currency: 'EUR' },
          fee: { value: 5, currency: 'USD' },
          note: 'é, 日本 and 🎉',
          closed_on: '2026-01-10',
          score: 3.25,
        },
        modified_at: '2026-02-01T10:00:00Z',
      },
      {
        user: `rep@${domain}`,
        date: '2026-01-31',
        plan: 'P',
        status: 'pending',
        currency: 'USD',
        payment: 800,
        metrics: { attainment: 0.8, tier: 'silver', note: NOTE_WITH_ESCAPES },
        modified_at: '2026-02-02T10:00:00Z',
      },
      {
        user: `rep@${domain}`,
        date: '2026-02-28',
        plan: 'P',
        status: 'validated',
        currency: 'USD',
        payment: null,
        metrics: { bonus: { value: 50, currency: 'USD' }, fee: { value: 7, currency: 'EUR' } },
        modified_at: '2026-03-01T10:00:00Z',
      },
      {
        user: `o"dd\\y@${domain}`,
        date: '2026-02-28',
        plan: 'P',
        status: 'paid',
        currency: 'EUR',
        payment: 0,
        metrics: { score: -1.5, closed_on: '2026-02-01' },
        modified_at: '2026-03-02T10:00:00Z',
      },
      {
        user: `josé.日本@${domain}`,
        date: '2026-03-31',
        plan: 'P',
        status: 'pending',
        currency: 'GBP',
        payment: 10.5,
        metrics: { bonus: { value: 1, currency: 'USD' }, tier: 'bronze' },
        modified_at: '2026-04-01T10:00:00Z',
      },
      {
        user: `owner@${domain}`,
        date: '2026-03-31',
        plan: 'P',
        status: 'validated',
        currency: 'EUR',
        payment: 1,
        modified_at: '2026-04-02T10:00:00Z',
      },
      {
        user: `owner@${domain}`,
        environment: 'sandbox',
        date: '2026-01-31',
        plan: 'P',
        status: 'paid',
        currency: 'EUR',
        payment: 1,
        metrics: { tier: 'gold' },
      },
    ],
    api_keys: [{ user: `owner@${domain}` }],
  }
}

/** A statement row as a test expects it, built by hand from the fixture (not by src/v2/rows.ts). */
interface ExpectedStatement {
  id: string
  user: { id: string; email: string | null }
  date: string
  total: { value: number; currency: string } | null
  status: string
  /** Values of the custom metrics as rendered; a metric missing here is null in the row. */
  custom: Record<string, unknown>
}

/** The row of a structure showing these metrics, its keys in the field schema's order. */
function rowOf(statement: ExpectedStatement, metricKeys: readonly string[]): Record<string, unknown> {
  const row: Record<string, unknown> = {
    'standard.id': statement.id,
    'standard.user': statement.user,
    'standard.date': statement.date,
    'standard.total_commission': statement.total,
    'standard.status': statement.status,
  }
  for (const key of metricKeys) row[`custom.${key}`] = statement.custom[key] ?? null
  return row
}

/** What a statement holds as its rendering for a structure showing these metrics: its row as JSON text. */
function rowText(statement: ExpectedStatement, metricKeys: readonly string[]): string {
  return JSON.stringify(rowOf(statement, metricKeys))
}

/** The exact text of a page of these rows. */
const pageText = (statements: readonly ExpectedStatement[], metricKeys: readonly string[], meta: object = END) =>
  JSON.stringify({ data: statements.map((statement) => rowOf(statement, metricKeys)), meta })

interface LoadedCompany {
  companyId: string
  apiKey: string
  domain: string
  id: (name: string) => string
  /** The live statements of the fixture, in its order (which is id order). */
  statementIds: string[]
  userId: (email: string) => string
  /** The live statements as the page must show them right after the load. */
  expected(): ExpectedStatement[]
}

describe('v2 statement rows rendered ahead of reads', () => {
  let server: TestServer
  let store: Store

  beforeAll(async () => {
    server = await startTestServer(V2_TEST_ENV)
    store = server.store
  })
  afterAll(() => server.close())

  async function loadCompany(name: string): Promise<LoadedCompany> {
    const fixture = renderingFixture(name)
    const { companyId, apiKey } = await server.load(fixture)
    const domain = `${name.toLowerCase()}.example`
    const stored = await store.statements.page(companyId, 'live', { limit: 100 })
    const live = fixture.statements!.filter((statement) => statement.environment !== 'sandbox')
    // Fixture order is id order: the expectations below rely on it.
    expect(stored.map((statement) => [statement.date, statement.status, statement.payment])).toEqual(
      live.map((statement) => [statement.date, statement.status, statement.payment]),
    )
    const users = await store.users.findByEmails(
      companyId,
      fixture.users.map((user) => user.email),
    )
    const userId = (email: string) => users.get(email.toLowerCase())!.id
    const user = (email: string) => ({ id: userId(email), email })
    const ids = stored.map((statement) => statement.id)
    return {
      companyId,
      apiKey,
      domain,
      id: await idsByName(server, companyId),
      statementIds: ids,
      userId,
      expected: () => [
        {
          id: ids[0],
          user: user(`owner@${domain}`),
          date: '2026-01-31',
          total: { value: 1200, currency: 'EUR' },
          status: 'paid',
          custom: {
            attainment: 1.2,
            tier: 'gold',
            bonus: { value: 200, currency: 'EUR' },
            fee: { value: 5, currency: 'USD' },
            note: 'é, 日本 and 🎉',
            closed_on: '2026-01-10',
            score: 3.25,
          },
        },
        {
          id: ids[1],
          user: user(`rep@${domain}`),
          date: '2026-01-31',
          total: { value: 800, currency: 'USD' },
          status: 'pending',
          custom: { attainment: 0.8, tier: 'silver', note: NOTE_WITH_ESCAPES },
        },
        {
          id: ids[2],
          user: user(`rep@${domain}`),
          date: '2026-02-28',
          total: null,
          status: 'validated',
          custom: { bonus: { value: 50, currency: 'USD' }, fee: { value: 7, currency: 'EUR' } },
        },
        {
          id: ids[3],
          user: user(`o"dd\\y@${domain}`),
          date: '2026-02-28',
          total: { value: 0, currency: 'EUR' },
          status: 'paid',
          custom: { score: -1.5, closed_on: '2026-02-01' },
        },
        {
          id: ids[4],
          user: user(`josé.日本@${domain}`),
          date: '2026-03-31',
          total: { value: 10.5, currency: 'GBP' },
          status: 'pending',
          custom: { bonus: { value: 1, currency: 'USD' }, tier: 'bronze' },
        },
        {
          id: ids[5],
          user: user(`owner@${domain}`),
          date: '2026-03-31',
          total: { value: 1, currency: 'EUR' },
          status: 'validated',
          custom: {},
        },
      ],
    }
  }

  /** GET the statements of a structure, asserting a 200; the raw text is what the tests compare. */
  async function statements(company: LoadedCompany, structure: string, query = '') {
    const reply = await server.call(`/v2/reporting/${company.id(structure)}/statements${query}`, { key: company.apiKey })
    expect(reply.status, reply.text).toBe(200)
    return reply
  }

  /** The key of renderings made for a structure as it is configured now. */
  async function keyOf(company: LoadedCompany, structure: string): Promise<string> {
    const found = (await store.structures.get(company.companyId, company.id(structure)))!
    return statementTexts((await structureColumns(store, found)).metrics).key
  }

  /** The rendering each live statement holds for the key (null for none), in id order. */
  async function renderingsFor(company: LoadedCompany, key: string): Promise<Array<string | null>> {
    return (await store.statements.pageForExtraction(company.companyId, 'live', { limit: 1000 }, key)).map(
      (statement) => statement.rendering,
    )
  }

  const patch = (company: LoadedCompany, path: string, body: unknown) =>
    server.call(`/admin/companies/${company.companyId}${path}`, { method: 'PATCH', headers: admin, body })

  it('a fixture load renders every live statement for the first live statement structure, and those rows are served byte for byte as rows rendered at read time', async () => {
    const company = await loadCompany('Loaded')
    const key = await keyOf(company, 'Statements')
    expect(key).not.toBe(await keyOf(company, 'Sandbox statements'))
    const renderings = await renderingsFor(company, key)
    expect(renderings).toEqual(company.expected().map((statement) => rowText(statement, ALL_METRICS)))
    // Sandbox statements are not rendered, for either structure.
    for (const sandboxKey of [key, await keyOf(company, 'Sandbox statements')]) {
      const sandbox = await store.statements.pageForExtraction(company.companyId, 'sandbox', { limit: 10 }, sandboxKey)
      expect(sandbox.map((statement) => statement.rendering)).toEqual([null])
    }

    const fromRenderings = await statements(company, 'Statements')
    expect(fromRenderings.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(Number(fromRenderings.headers['content-length'])).toBe(Buffer.byteLength(fromRenderings.text))
    expect(fromRenderings.text).toBe(pageText(company.expected(), ALL_METRICS))

    // Replace every rendering by one made for another key: the page must ignore them all and render each row.
    await store.statements.saveRenderings(
      company.companyId,
      'live',
      company.statementIds.map((id) => ({ id, key: 'another-key', text: '{"stale":true}' })),
    )
    expect(await renderingsFor(company, key)).toEqual(Array(6).fill(null))
    const renderedNow = await statements(company, 'Statements')
    expect(renderedNow.text).toBe(fromRenderings.text)
    expect(renderedNow.headers['content-length']).toBe(fromRenderings.headers['content-length'])

    // Rendering again for the key gives the same renderings and the same bytes; a second run finds nothing to render.
    expect(await renderStatements(store, company.companyId)).toBe(6)
    expect(await renderingsFor(company, key)).toEqual(renderings)
    expect((await statements(company, 'Statements')).text).toBe(fromRenderings.text)
    expect(await renderStatements(store, company.companyId)).toBe(0)

    // And the first path really serves the stored text: a rendering for the key shows as it is stored.
    await store.statements.saveRenderings(company.companyId, 'live', [{ id: company.statementIds[2], key, text: '{"stored":"text"}' }])
    expect((await statements(company, 'Statements')).body.data[2]).toStrictEqual({ stored: 'text' })
  })

  it('serves a second live statement structure showing other metrics in another order, rendering its rows at read time', async () => {
    const company = await loadCompany('Second')
    const narrowKey = await keyOf(company, 'Narrow')
    expect(narrowKey).not.toBe(await keyOf(company, 'Statements'))
    expect(await renderingsFor(company, narrowKey)).toEqual(Array(6).fill(null))

    const narrow = await statements(company, 'Narrow')
    expect(narrow.text).toBe(pageText(company.expected(), NARROW_METRICS))
    expect(Object.keys(narrow.body.data[0]).slice(5)).toEqual(['custom.score', 'custom.note', 'custom.bonus'])
    const schema = (await server.call(`/v2/data-structures/${company.id('Narrow')}/fields`, { key: company.apiKey })).body.fields
    for (const row of narrow.body.data) expect(Object.keys(row)).toEqual(schema.map((field: any) => field.api_key))

    // Reading it rendered and stored nothing; the first structure still reads its renderings.
    expect(await renderingsFor(company, narrowKey)).toEqual(Array(6).fill(null))
    expect((await statements(company, 'Statements')).text).toBe(pageText(company.expected(), ALL_METRICS))
    const paged = await statements(company, 'Narrow', '?limit=4')
    expect(paged.text).toBe(
      pageText(company.expected().slice(0, 4), NARROW_METRICS, {
        next_start_id: company.statementIds[3],
        has_more: true,
        next_url: `${server.url}/v2/reporting/${company.id('Narrow')}/statements?start_id=${company.statementIds[3]}&limit=4`,
      }),
    )
  })

  describe('after PATCH of a custom metric’s kind, every row is rendered by the new kind and renderings are made for the new key', () => {
    it.each([
      // score: 3.25 on statement 0 (EUR) and -1.5 on statement 3 (EUR).
      ['score', 'amount', { 0: { value: 3.25, currency: 'EUR' }, 3: { value: -1.5, currency: 'EUR' } }],
      // bonus: amounts on statements 0, 2 and 4.
      ['bonus', 'float', { 0: 200, 2: 50, 4: 1 }],
      // fee: amounts on statements 0 and 2, which a date cannot show.
      ['fee', 'date', { 0: null, 2: null }],
      ['tier', 'text', {}],
    ] as const)('%s becomes %s', async (metric, kind, changed: Record<number, unknown>) => {
      const company = await loadCompany(`Kind-${metric}`)
      const before = await keyOf(company, 'Statements')
      const reply = await patch(company, `/custom-metrics/${metric}`, { kind })
      expect(reply.status, reply.text).toBe(200)
      expect(reply.body).toMatchObject({ api_key: metric, kind })

      const expected = company.expected()
      for (const [index, value] of Object.entries(changed)) expected[Number(index)].custom[metric] = value
      expect((await statements(company, 'Statements')).text).toBe(pageText(expected, ALL_METRICS))
      expect((await statements(company, 'Narrow')).text).toBe(pageText(expected, NARROW_METRICS))

      const after = await keyOf(company, 'Statements')
      expect(after).not.toBe(before)
      expect(await renderingsFor(company, before)).toEqual(Array(6).fill(null))
      expect(await renderingsFor(company, after)).toEqual(expected.map((statement) => rowText(statement, ALL_METRICS)))
    })

    it('tier’s enum_values narrowed: a value no longer allowed reads as null, and renderings are made for the new key', async () => {
      const company = await loadCompany('EnumNarrowed')
      const before = await keyOf(company, 'Statements')
      const reply = await patch(company, '/custom-metrics/tier', { enum_values: ['gold', 'platinum'] })
      expect(reply.status, reply.text).toBe(200)

      const expected = company.expected()
      const tiers = expected.map((statement) => statement.custom.tier)
      expect(tiers).toEqual(expect.arrayContaining(['gold', 'silver', 'bronze']))
      for (const statement of expected) if (statement.custom.tier !== 'gold') statement.custom.tier = null
      const page = await statements(company, 'Statements')
      expect(page.text).toBe(pageText(expected, ALL_METRICS))
      expect(page.body.data.map((row: any) => row['custom.tier'])).toEqual(tiers.map((tier) => (tier === 'gold' ? 'gold' : null)))

      const after = await keyOf(company, 'Statements')
      expect(after).not.toBe(before)
      expect(await renderingsFor(company, after)).toEqual(expected.map((statement) => rowText(statement, ALL_METRICS)))
      const v1 = await server.call('/v1/reporting/statements?limit=100', { key: company.apiKey })
      expect(v1.status).toBe(200)
      expect(new Set(v1.body.data.map((row: any) => row.tier))).toEqual(new Set(['gold', null]))
    })

    it('and back again: the first kind’s rows and key return', async () => {
      const company = await loadCompany('KindBack')
      const first = await keyOf(company, 'Statements')
      const original = (await statements(company, 'Statements')).text
      expect((await patch(company, '/custom-metrics/attainment', { kind: 'text' })).status).toBe(200)
      expect((await statements(company, 'Statements')).body.data.map((row: any) => row['custom.attainment'])).toEqual([
        '1.2',
        '0.8',
        null,
        null,
        null,
        null,
      ])
      expect((await patch(company, '/custom-metrics/attainment', { kind: 'percentage' })).status).toBe(200)
      expect(await keyOf(company, 'Statements')).toBe(first)
      expect((await renderingsFor(company, first)).every((rendering) => typeof rendering === 'string')).toBe(true)
      expect((await statements(company, 'Statements')).text).toBe(original)
    })
  })

  it('after PATCH of a structure’s metrics (removed, reordered, added back), rows follow and renderings are for the new key', async () => {
    const company = await loadCompany('Structure')
    const before = await keyOf(company, 'Statements')

    const shown = ['score', 'note', 'tier']
    const reply = await patch(company, `/reporting-structures/${company.id('Statements')}`, { metrics: shown })
    expect(reply.status, reply.text).toBe(200)
    const reordered = await statements(company, 'Statements')
    expect(reordered.text).toBe(pageText(company.expected(), shown))
    const schema = (await server.call(`/v2/data-structures/${company.id('Statements')}/fields`, { key: company.apiKey })).body.fields
    expect(Object.keys(reordered.body.data[0])).toEqual(schema.map((field: any) => field.api_key))
    const key = await keyOf(company, 'Statements')
    expect(key).not.toBe(before)
    expect(key).toBe(
      statementTexts(
        (await store.metrics.list(company.companyId))
          .filter((item) => shown.includes(item.api_key))
          .toSorted((a, b) => shown.indexOf(a.api_key) - shown.indexOf(b.api_key)),
      ).key,
    )
    expect((await renderingsFor(company, key)).every((rendering) => typeof rendering === 'string')).toBe(true)
    expect(await renderingsFor(company, before)).toEqual(Array(6).fill(null))

    // A rename changes no column: the renderings stay as they are.
    const renderings = await renderingsFor(company, key)
    expect((await patch(company, `/reporting-structures/${company.id('Statements')}`, { name: 'Renamed' })).status).toBe(200)
    company.id = await idsByName(server, company.companyId)
    expect(await keyOf(company, 'Renamed')).toBe(key)
    expect(await renderingsFor(company, key)).toEqual(renderings)

    // No metric at all, then every metric again.
    expect((await patch(company, `/reporting-structures/${company.id('Renamed')}`, { metrics: [] })).status).toBe(200)
    expect((await statements(company, 'Renamed')).text).toBe(pageText(company.expected(), []))
    expect((await renderingsFor(company, await keyOf(company, 'Renamed'))).every((rendering) => typeof rendering === 'string')).toBe(true)
    expect((await patch(company, `/reporting-structures/${company.id('Renamed')}`, { metrics: ALL_METRICS })).status).toBe(200)
    expect((await statements(company, 'Renamed')).text).toBe(pageText(company.expected(), ALL_METRICS))
    expect(await keyOf(company, 'Renamed')).toBe(before)
  })

  it('after PATCH of a statement’s payment and status, the page shows the new values at once and the statement holds a fresh rendering', async () => {
    const company = await loadCompany('Revised')
    const key = await keyOf(company, 'Statements')
    const renderings = await renderingsFor(company, key)
    const expected = company.expected()
    const target = company.statementIds[1]

    let reply = await patch(company, `/statements/${target}`, { payment: 999.5, status: 'paid' })
    expect(reply.status, reply.text).toBe(200)
    expected[1].total = { value: 999.5, currency: 'USD' }
    expected[1].status = 'paid'
    expect((await statements(company, 'Statements')).text).toBe(pageText(expected, ALL_METRICS))
    expect((await statements(company, 'Narrow')).text).toBe(pageText(expected, NARROW_METRICS))
    const afterFirst = await renderingsFor(company, key)
    expect(afterFirst[1]).toBe(rowText(expected[1], ALL_METRICS))
    // Only the statement written was rendered again.
    expect(afterFirst.filter((_, index) => index !== 1)).toEqual(renderings.filter((_, index) => index !== 1))

    reply = await patch(company, `/statements/${target}`, { payment: null })
    expect(reply.status, reply.text).toBe(200)
    expected[1].total = null
    expect((await statements(company, 'Statements')).text).toBe(pageText(expected, ALL_METRICS))

    reply = await patch(company, `/statements/${company.statementIds[2]}`, { payment: 12.75, status: 'pending' })
    expect(reply.status, reply.text).toBe(200)
    expected[2].total = { value: 12.75, currency: 'USD' }
    expected[2].status = 'pending'
    expect((await statements(company, 'Statements')).text).toBe(pageText(expected, ALL_METRICS))
    expect((await renderingsFor(company, key)).every((rendering) => typeof rendering === 'string')).toBe(true)
  })

  it('shows a null email for a statement whose user does not exist, rendered ahead or not', async () => {
    const company = await loadCompany('Emails')
    const key = await keyOf(company, 'Statements')
    const expected = company.expected()

    // Statements of users that do not exist: one rendered ahead, one not.
    const ghost = newId()
    const other = newId()
    const renderedGhost = aStatement(company.companyId, {
      user_id: ghost,
      date: '2026-04-30',
      status: 'paid',
      currency: 'EUR',
      payment: 5,
      metrics: { tier: 'gold' },
    })
    await store.statements.insertMany([renderedGhost])
    expect(await renderStatements(store, company.companyId)).toBe(1)
    const unrenderedGhost = aStatement(company.companyId, {
      user_id: other,
      date: '2026-05-31',
      status: 'pending',
      currency: 'USD',
      payment: 6,
      metrics: { note: 'ghost' },
    })
    await store.statements.insertMany([unrenderedGhost])
    expect((await renderingsFor(company, key)).slice(6).map((rendering) => typeof rendering)).toEqual(['string', 'object'])

    expected.push(
      {
        id: renderedGhost.id,
        user: { id: ghost, email: null },
        date: '2026-04-30',
        total: { value: 5, currency: 'EUR' },
        status: 'paid',
        custom: { tier: 'gold' },
      },
      {
        id: unrenderedGhost.id,
        user: { id: other, email: null },
        date: '2026-05-31',
        total: { value: 6, currency: 'USD' },
        status: 'pending',
        custom: { note: 'ghost' },
      },
    )
    expect((await statements(company, 'Statements')).text).toBe(pageText(expected, ALL_METRICS))
  })

  it.each([2, 3])(
    'a walk with limit %i over rendered and unrendered statements returns every row once, in id order, as expected',
    async (limit) => {
      const company = await loadCompany(`Walk${limit}`)
      const key = await keyOf(company, 'Statements')
      const expected = company.expected()
      // Statements written again straight in the store lose their renderings and are not rendered again.
      const unrendered = [0, 3, 4]
      for (const index of unrendered) {
        const written = await store.adminEdits.updateStatement(company.companyId, company.statementIds[index], {
          modified_at: '2026-05-01T00:00:00.000Z',
          payment: 100 + index,
        })
        expect(written?.payment).toBe(100 + index)
        expected[index].total = { value: 100 + index, currency: expected[index].total?.currency ?? 'EUR' }
      }
      // A statement inserted after the load, never rendered: a date-time as a date, values of the wrong type (a tier
      // that is none of the enum's values), an amount without its currency.
      const inserted = aStatement(company.companyId, {
        user_id: company.userId(`owner@${company.domain}`),
        date: '2026-05-31',
        status: 'validated',
        currency: 'USD',
        payment: 7,
        metrics: { closed_on: '2026-01-10T23:30:00-02:00', attainment: '12%', tier: 9, score: { value: 2, currency: 'EUR' }, bonus: 3 },
      })
      await store.statements.insertMany([inserted])
      expected.push({
        id: inserted.id,
        user: { id: company.userId(`owner@${company.domain}`), email: `owner@${company.domain}` },
        date: '2026-05-31',
        total: { value: 7, currency: 'USD' },
        status: 'validated',
        custom: { closed_on: '2026-01-11', tier: null, score: 2, bonus: { value: 3, currency: 'USD' } },
      })
      expect((await renderingsFor(company, key)).map((rendering) => rendering !== null)).toEqual([
        false,
        true,
        true,
        false,
        false,
        true,
        false,
      ])

      const { rows, metas } = await walk(server, company.apiKey, `/v2/reporting/${company.id('Statements')}/statements?limit=${limit}`)
      expect(JSON.stringify(rows)).toBe(JSON.stringify(expected.map((statement) => rowOf(statement, ALL_METRICS))))
      const ids = rows.map((row) => row['standard.id'])
      expect(new Set(ids).size).toBe(7)
      expect(ids).toEqual(ids.toSorted())
      expect(metas).toHaveLength(Math.ceil(7 / limit))
      // Each page's raw text is the expected page.
      let startId: string | null = null
      for (let page = 0; page * limit < 7; page++) {
        const slice = expected.slice(page * limit, (page + 1) * limit)
        const more = (page + 1) * limit < 7
        const last = slice[slice.length - 1].id
        const query = `?limit=${limit}${startId ? `&start_id=${startId}` : ''}`
        const meta = more
          ? {
              next_start_id: last,
              has_more: true,
              next_url: `${server.url}/v2/reporting/${company.id('Statements')}/statements?start_id=${last}&limit=${limit}`,
            }
          : END
        expect((await statements(company, 'Statements', query)).text).toBe(pageText(slice, ALL_METRICS, meta))
        startId = last
      }
    },
  )
})

describe('rendering ahead, after a commit that stands', () => {
  it('leaves the statements to be rendered as they are read when the store cannot write for now, and fails on anything else', async () => {
    const { store, dispose } = await openTestStore()
    try {
      const { company_id: companyId } = await loadFixture(store, new ManualClock(), smallFixture())
      // A statement to render, found by the first read; its batch's transaction then fails as given.
      const failingWith = (error: Error): Store => ({
        ...store,
        statements: { ...store.statements, pageToRender: async () => [aStatement(companyId)] },
        transaction: async () => {
          throw error
        },
      })
      for (const error of [new StoreBusyError('locked'), new StoreFullError('no room'), new StoreUnconfirmedError('out of reach')]) {
        await expect(renderStatementsAhead(failingWith(error), companyId), error.name).resolves.toBeUndefined()
      }
      await expect(renderStatementsAhead(failingWith(new Error('a bug')), companyId)).rejects.toThrow('a bug')
    } finally {
      await dispose()
    }
  })
})
