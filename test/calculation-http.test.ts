import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { newId } from '../src/ids.ts'
import { ImportWorker } from '../src/imports/worker.ts'
import { type CallOptions, type Reply, startTestServer, type TestServer } from './helpers/server.ts'
import { openTestStore } from './helpers/test-store.ts'
import { reviseMetric } from '../src/admin/data-edits.ts'
import { savePlan } from '../src/admin/plans.ts'
import { ManualClock } from '../src/clock.ts'
import { ValidationError } from '../src/errors.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import type { FixturePlan } from '../src/fixtures/schema.ts'
import type { Store } from '../src/store/port.ts'

/**
 * Plans over HTTP, end to end: what v1 writes becomes what v2 (and the deprecated v1 reads) serve, and an
 * incremental sync sees exactly what changed. The test server's clock starts at 2026-06-01.
 */

const ADMIN_TOKEN = 'calculation-admin-token-0123456789'

const deal = (id: string, owner: string, closeDate: string, amount: number, currency = 'EUR', types = 'upsell') => ({
  id,
  name: `Deal ${id}`,
  owner_id: owner,
  close_date: closeDate,
  amount,
  amount_currency: currency,
  deal_types: types,
  modified_at: '2026-05-31T00:00:00Z',
})

function plannedCompany() {
  return {
    company: { name: 'Planned', default_currency: 'EUR' },
    users: [
      // The key's owner: archiving a salesperson must not take the key away.
      { email: 'admin@planned.example', currency: 'EUR' },
      { email: 'ann@planned.example', currency: 'EUR' },
      { email: 'bob@planned.example', currency: 'USD' },
    ],
    custom_metrics: [
      { api_key: 'attainment', name: 'Attainment', kind: 'percentage' },
      { api_key: 'tier', name: 'Tier', kind: 'enum', enum_values: ['silver', 'gold'] },
      { api_key: 'bonus', name: 'Bonus', kind: 'amount' },
    ],
    data_tables: [
      {
        key: 'deals',
        name: 'Deals',
        id_field: 'id',
        name_field: 'name',
        fields: [
          { api_key: 'id', name: 'Id', type: 'string' },
          { api_key: 'name', name: 'Name', type: 'string' },
          { api_key: 'owner_id', name: 'Owner', type: 'string' },
          { api_key: 'close_date', name: 'Close date', type: 'datetime' },
          { api_key: 'amount', name: 'Amount', type: 'amount' },
          { api_key: 'deal_types', name: 'Types', type: 'multi' },
        ],
        records: [
          deal('D-0', 'ann@planned.example', '2026-04-10T10:00:00Z', 5_000),
          deal('D-1', 'ann@planned.example', '2026-05-10T10:00:00Z', 6_000),
        ],
      },
    ],
    reporting_structures: [
      { name: 'Statements', type: 'statement_reporting', metrics: ['attainment', 'tier', 'bonus'] },
      { name: 'Deal commissions', type: 'record_reporting', data_table: 'deals', metrics: ['bonus'], fields: ['name', 'amount'] },
    ],
    quotas: [
      {
        name: 'Monthly bookings',
        type: 'amount',
        frequency: 'monthly',
        currency: 'EUR',
        values: ['2026-04', '2026-05', '2026-06'].map((period) => ({ user: 'ann@planned.example', period, value: 10_000 })),
      },
    ],
    plans: [
      {
        name: 'Sales plan',
        data_table: 'deals',
        user_field: 'owner_id',
        date_field: 'close_date',
        amount_field: 'amount',
        frequency: 'monthly',
        rate: 0.05,
        quota: 'Monthly bookings',
        tiers: [
          { from: 0.8, rate: 0.06, name: 'silver' },
          { from: 1.1, rate: 0.1, name: 'gold' },
        ],
        metrics: { attainment: 'attainment', tier: 'tier', bonus: 'bonus' },
      },
    ],
    closed_periods: [{ through: '2026-04', status: 'paid' }],
  }
}

interface Harness {
  server: TestServer
  worker: ImportWorker
  companyId: string
  call(path: string, options?: CallOptions): Promise<Reply>
  admin(path: string, options?: CallOptions): Promise<Reply>
  /** Posts records, runs the import and asserts it finished without error. */
  upsertDeals(records: unknown[]): Promise<void>
  /** Every row of a v2 endpoint, following next_url. */
  walk(path: string): Promise<any[]>
  statementsPath: string
  recordsPath: string
}

async function startHarness(): Promise<Harness> {
  const server = await startTestServer({ RATE_LIMIT_PER_SECOND: '1000000', ADMIN_TOKEN }, {}, { transport: 'inject' })
  const { companyId, apiKey } = await server.load(plannedCompany())
  const worker = new ImportWorker({ store: server.store, clock: server.clock, owner: 'calculation-test' })
  const call = (path: string, options: CallOptions = {}) => server.call(path, { key: apiKey, ...options })
  const discovery = await call('/v2/data-structures')
  const linkOf = (type: string) =>
    new URL(discovery.body.data.find((entry: { type: string }) => entry.type === type).links.records).pathname
  return {
    server,
    worker,
    companyId,
    call,
    admin: (path, options = {}) =>
      server.call(path, { ...options, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...options.headers } }),
    async upsertDeals(records) {
      const posted = await call('/v1/tables/deals/records/bulk', { method: 'POST', body: records })
      expect(posted.status).toBe(200)
      await worker.drain()
      const imported = await call(`/v1/imports/${posted.body.import_id}`)
      expect(imported.body.data_import).toMatchObject({ status: 'finished', error: false })
    },
    async walk(path) {
      const rows = []
      let next: string | null = path
      while (next) {
        const page: Reply = await call(next.startsWith('http') ? new URL(next).pathname + new URL(next).search : next)
        expect(page.status).toBe(200)
        rows.push(...page.body.data)
        next = page.body.meta.next_url
      }
      return rows
    },
    statementsPath: linkOf('statement_reporting'),
    recordsPath: linkOf('record_reporting'),
  }
}

const salesPlan = () => plannedCompany().plans[0]
/** Ann's one renewal, in May. */
const renewal = (amount: number) => [deal('R-1', 'ann@planned.example', '2026-05-20T10:00:00Z', amount)]
const byDateOf = (rows: any[], date: string) => rows.filter((row) => row['standard.date'] === date)
const dealOf = (row: any) => row['datatable.name']

// Every test starts from the planned company, with a worker of its own.
let h: Harness

beforeEach(async () => {
  h = await startHarness()
})
afterEach(async () => {
  await h.worker.stop()
  await h.server.close()
})

describe('plans over HTTP', () => {
  it('turns an upserted deal into a line and a new total, which an incremental sync sees, and a deletion takes back', async () => {
    const before = await h.walk(h.statementsPath)
    const [may] = byDateOf(before, '2026-05-01')
    // 6,000 of a 10,000 target: 60 %, under silver: 5 % = 300.
    expect(may).toMatchObject({
      'standard.total_commission': { value: 300, currency: 'EUR' },
      'standard.status': 'pending',
      'custom.attainment': 0.6,
      'custom.tier': null,
    })
    const linesBefore = await h.walk(h.recordsPath)
    expect(linesBefore.map(dealOf).toSorted()).toEqual(['Deal D-0', 'Deal D-1'])

    h.server.clock.advance(60_000)
    const sinceUpsert = h.server.clock.now().toISOString()
    h.server.clock.advance(1_000)
    await h.upsertDeals([
      {
        id: 'D-2',
        name: 'Deal D-2',
        owner_id: 'ann@planned.example',
        close_date: '2026-05-20',
        amount: 4_000,
        amount_currency: 'EUR',
        deal_types: 'new',
      },
    ])

    // 10,000 of 10,000: 100 %, silver at 6 % for the whole month: D-1 360, D-2 240.
    const [mayAfter] = byDateOf(await h.walk(h.statementsPath), '2026-05-01')
    expect(mayAfter).toMatchObject({
      'standard.id': may['standard.id'],
      'standard.total_commission': { value: 600, currency: 'EUR' },
      'custom.attainment': 1,
      'custom.tier': 'silver',
    })
    expect(mayAfter['custom.bonus']).toEqual({ value: 100, currency: 'EUR' })
    const lines = await h.walk(h.recordsPath)
    expect(lines.map((line) => [dealOf(line), line['standard.commission_impact'].value]).toSorted()).toEqual([
      ['Deal D-0', 250],
      ['Deal D-1', 360],
      ['Deal D-2', 240],
    ])
    const total = lines
      .filter((line) => line['standard.date'].startsWith('2026-05'))
      .reduce((sum, line) => sum + line['standard.commission_impact'].value, 0)
    expect(total).toBe(mayAfter['standard.total_commission'].value)

    // An incremental sync sees exactly the rows whose values changed: the statement, the re-priced line, the new one.
    const changedStatements = await h.walk(`${h.statementsPath}?last_modified_after=${sinceUpsert}`)
    expect(changedStatements.map((row) => row['standard.id'])).toEqual([may['standard.id']])
    const changedLines = await h.walk(`${h.recordsPath}?last_modified_after=${sinceUpsert}`)
    expect(changedLines.map(dealOf).toSorted()).toEqual(['Deal D-1', 'Deal D-2'])

    // The deprecated v1 read and discovery say the same.
    const v1 = await h.call('/v1/reporting?limit=10')
    expect(v1.body.data.find((row: any) => row.id === may['standard.id'])).toMatchObject({ payment: 600, attainment: 1, tier: 'silver' })
    const discovery = await h.call('/v2/data-structures')
    expect(discovery.body.data.find((entry: any) => entry.type === 'record_reporting').total_records).toBe(3)

    h.server.clock.advance(60_000)
    const sinceDeletion = h.server.clock.now().toISOString()
    h.server.clock.advance(1_000)
    await h.upsertDeals([{ id: 'D-2', deleted: true }])
    const [mayBack] = byDateOf(await h.walk(h.statementsPath), '2026-05-01')
    expect(mayBack).toMatchObject({
      'standard.total_commission': { value: 300, currency: 'EUR' },
      'custom.attainment': 0.6,
      'custom.tier': null,
    })
    expect((await h.walk(h.recordsPath)).map(dealOf).toSorted()).toEqual(['Deal D-0', 'Deal D-1'])
    expect((await h.walk(`${h.recordsPath}?last_modified_after=${sinceDeletion}`)).map(dealOf)).toEqual(['Deal D-1'])
  })

  it('rewrites nothing for a deal sent again unchanged, and follows one reassigned to another owner, then moved to another month', async () => {
    const fixtureDeal = plannedCompany().data_tables[0].records[1]
    const lineOfDeal = async () => (await h.walk(h.recordsPath)).find((row) => dealOf(row) === 'Deal D-1')
    const changedSince = async (since: string) => ({
      statements: (await h.walk(`${h.statementsPath}?last_modified_after=${since}`)).map((row) => [
        row['standard.user'].email,
        row['standard.date'],
      ]),
      lines: (await h.walk(`${h.recordsPath}?last_modified_after=${since}`)).map((row) => [dealOf(row), row['standard.date']]),
    })
    const advance = () => {
      h.server.clock.advance(60_000)
      const since = h.server.clock.now().toISOString()
      h.server.clock.advance(1_000)
      return since
    }

    const sinceResend = advance()
    await h.upsertDeals([fixtureDeal])
    expect(await changedSince(sinceResend)).toEqual({ statements: [], lines: [] })

    const sinceReassignment = advance()
    await h.upsertDeals([{ ...fixtureDeal, owner_id: 'admin@planned.example' }])
    expect(await lineOfDeal()).toMatchObject({
      'standard.user': { email: 'admin@planned.example' },
      'standard.commission_impact': { value: 300, currency: 'EUR' },
    })
    const may = byDateOf(await h.walk(h.statementsPath), '2026-05-01')
    expect(may.map((row) => [row['standard.user'].email, row['standard.total_commission'].value]).toSorted()).toEqual([
      ['admin@planned.example', 300],
      ['ann@planned.example', 0],
    ])
    expect(await changedSince(sinceReassignment)).toEqual({
      statements: expect.arrayContaining([
        ['ann@planned.example', '2026-05-01'],
        ['admin@planned.example', '2026-05-01'],
      ]),
      lines: [['Deal D-1', '2026-05-10']],
    })

    const sinceMove = advance()
    await h.upsertDeals([{ ...fixtureDeal, owner_id: 'admin@planned.example', close_date: '2026-06-15T09:00:00Z' }])
    expect(await lineOfDeal()).toMatchObject({ 'standard.date': '2026-06-15', 'standard.user': { email: 'admin@planned.example' } })
    const adminStatements = (await h.walk(h.statementsPath)).filter((row) => row['standard.user'].email === 'admin@planned.example')
    expect(adminStatements.map((row) => [row['standard.date'], row['standard.total_commission'].value])).toEqual([['2026-06-01', 300]])
    expect(await changedSince(sinceMove)).toEqual({
      statements: [['admin@planned.example', '2026-06-01']],
      lines: [['Deal D-1', '2026-06-15']],
    })
    expect((await h.walk(h.recordsPath)).map(dealOf).toSorted()).toEqual(['Deal D-0', 'Deal D-1'])
  })

  it('changes nothing in a paid period: its statement and lines stay as they were', async () => {
    const [april] = byDateOf(await h.walk(h.statementsPath), '2026-04-01')
    expect(april).toMatchObject({ 'standard.status': 'paid', 'standard.total_commission': { value: 250, currency: 'EUR' } })
    const stored = await h.server.store.statements.findOfPlan(h.companyId, (await h.server.store.plans.list(h.companyId))[0].id)
    h.server.clock.advance(60_000)
    await h.upsertDeals([
      {
        id: 'D-3',
        name: 'Deal D-3',
        owner_id: 'ann@planned.example',
        close_date: '2026-04-15',
        amount: 50_000,
        amount_currency: 'EUR',
        deal_types: 'new',
      },
      {
        id: 'D-0',
        name: 'Deal D-0',
        owner_id: 'ann@planned.example',
        close_date: '2026-04-10',
        amount: 1,
        amount_currency: 'EUR',
        deal_types: 'new',
      },
    ])
    const [aprilAfter] = byDateOf(await h.walk(h.statementsPath), '2026-04-01')
    expect(aprilAfter).toEqual(april)
    expect(await h.server.store.statements.findOfPlan(h.companyId, (await h.server.store.plans.list(h.companyId))[0].id)).toEqual(stored)
    expect((await h.walk(h.recordsPath)).map((line) => [dealOf(line), line['standard.commission_impact'].value]).toSorted()).toEqual([
      ['Deal D-0', 250],
      ['Deal D-1', 300],
    ])
  })

  it('calculates a deal of a user created later, once the users import brings them', async () => {
    await h.upsertDeals([
      {
        id: 'D-9',
        name: 'Deal D-9',
        owner_id: 'cat@planned.example',
        close_date: '2026-05-05',
        amount: 2_000,
        amount_currency: 'EUR',
        deal_types: 'new',
      },
    ])
    expect((await h.walk(h.recordsPath)).map(dealOf)).not.toContain('Deal D-9')
    const problems = await h.admin(`/admin/companies/${h.companyId}/calculation-problems`)
    expect(problems.body.data[0].problems).toEqual([
      expect.objectContaining({ record: 'D-9', message: 'owner_id: no user cat@planned.example' }),
    ])

    const users = await h.call('/v1/users/bulk', { method: 'PUT', body: { data: [{ email: 'Cat@planned.example', currency: 'EUR' }] } })
    expect(users.status).toBe(200)
    await h.worker.drain()
    const line = (await h.walk(h.recordsPath)).find((row) => dealOf(row) === 'Deal D-9')
    expect(line).toMatchObject({
      'standard.commission_impact': { value: 100, currency: 'EUR' },
      'standard.user': { email: 'Cat@planned.example' },
    })
  })

  it('stops paying an archived user after their last month of activity', async () => {
    await h.upsertDeals([
      {
        id: 'D-6',
        name: 'Deal D-6',
        owner_id: 'ann@planned.example',
        close_date: '2026-06-02',
        amount: 1_000,
        amount_currency: 'EUR',
        deal_types: 'new',
      },
    ])
    expect(byDateOf(await h.walk(h.statementsPath), '2026-06-01')).toHaveLength(1)
    const archived = await h.call('/v1/users/archive/bulk', {
      method: 'DELETE',
      body: { data: [{ user: 'ann@planned.example', end_date: '2026-05' }] },
    })
    expect(archived.status).toBe(200)
    expect(byDateOf(await h.walk(h.statementsPath), '2026-06-01')).toEqual([])
    expect(byDateOf(await h.walk(h.statementsPath), '2026-05-01')).toHaveLength(1)
    expect((await h.walk(h.recordsPath)).map(dealOf)).not.toContain('Deal D-6')
  })
})

const metrics = async () => h.server.store.metrics.list(h.companyId)
const editMetric = (key: string, body: unknown) =>
  h.admin(`/admin/companies/${h.companyId}/custom-metrics/${key}`, { method: 'PATCH', body })

describe('plans and exchange rates through the admin routes', () => {
  it('shows the plans in the company inventory, with the statements each calculated', async () => {
    const inventory = await h.admin(`/admin/companies/${h.companyId}`)
    expect(inventory.status).toBe(200)
    expect(inventory.body.plans).toEqual([
      { id: expect.any(String), name: 'Sales plan', environment: 'live', data_table: 'deals', frequency: 'monthly', statements: 3 },
    ])
  })

  it('refuses a plan created, or renamed, under the name of statements a fixture loaded: it would state them twice', async () => {
    const history = { user: 'ann@planned.example', date: '2026-04-30', plan: 'History', status: 'paid', currency: 'EUR', payment: 100 }
    const { companyId } = await h.server.load({
      ...plannedCompany(),
      company: { name: 'With history', default_currency: 'EUR' },
      statements: [history],
    })
    const plans = `/admin/companies/${companyId}/plans`
    const refused = await h.admin(plans, { method: 'POST', body: { ...salesPlan(), name: 'History' } })
    expect(refused.status).toBe(400)
    expect(refused.body.errors).toEqual([expect.objectContaining({ error: 'ConflictError', resource: 'name' })])
    const created = await h.admin(plans, { method: 'POST', body: { ...salesPlan(), name: 'Forecast' } })
    expect(created.status, created.text).toBe(201)
    const renamed = await h.admin(`${plans}/${created.body.plan.id}`, { method: 'PUT', body: { ...salesPlan(), name: 'History' } })
    expect(renamed.status).toBe(400)
    expect(renamed.body.errors).toEqual([expect.objectContaining({ error: 'ConflictError', resource: 'name' })])
    // In the other environment the name is free: the loaded statements are live ones (the sandbox has no deals table,
    // for which this plan is refused, but not for its name).
    const sandbox = await h.admin(plans, { method: 'POST', body: { ...salesPlan(), name: 'History', environment: 'sandbox' } })
    expect(sandbox.body.errors.map((error: { resource: string }) => error.resource)).toEqual(['data_table', 'quota'])
  })

  it('refuses a plan moved into the environment of statements a fixture loaded under its name', async () => {
    const fixture = plannedCompany()
    const history = { user: 'ann@planned.example', date: '2026-04-30', plan: 'History', status: 'paid', currency: 'EUR', payment: 100 }
    const sandboxDeals = { ...fixture.data_tables[0], environment: 'sandbox', records: [] }
    const { companyId } = await h.server.load({
      ...fixture,
      company: { name: 'With history in live', default_currency: 'EUR' },
      data_tables: [...fixture.data_tables, sandboxDeals],
      statements: [history],
    })
    const plans = `/admin/companies/${companyId}/plans`
    const { quota: _quota, tiers: _tiers, metrics: _metrics, ...plain } = salesPlan()
    const created = await h.admin(plans, { method: 'POST', body: { ...plain, name: 'History', environment: 'sandbox' } })
    expect(created.status, created.text).toBe(201)
    // Its name unchanged, it is moved to where the loaded statements are: it would state them a second time.
    const moved = await h.admin(`${plans}/${created.body.plan.id}`, { method: 'PUT', body: { ...plain, name: 'History' } })
    expect(moved.status, moved.text).toBe(400)
    expect(moved.body.errors).toEqual([expect.objectContaining({ error: 'ConflictError', resource: 'name' })])
  })

  it('takes the pending statements of a plan moved to the sandbox out of live, and states them there once', async () => {
    const { companyId, plans, plain, created, liveStatements } = await companyWithMovingPlan('Moving plan', [
      deal('S-1', 'ann@planned.example', '2026-05-12T10:00:00Z', 1_000),
    ])
    expect((await liveStatements()).map((row: { date: string }) => row.date)).toEqual(['2026-04-01', '2026-05-01'])

    const moved = await h.admin(`${plans}/${created.body.plan.id}`, {
      method: 'PUT',
      body: { ...plain, name: 'Moving', environment: 'sandbox' },
    })
    expect(moved.status, moved.text).toBe(200)
    // May's statement kept its id, now the sandbox's: it was left in live too, stating the live deals no plan of live reads.
    expect(await liveStatements()).toEqual([])
    const sandbox = await h.server.store.statements.page(companyId, 'sandbox', { limit: 10 })
    expect(sandbox.map((statement) => [statement.date, statement.payment])).toEqual([['2026-05-01', 50]])
  })

  it('refuses to move a plan with paid statements to the other environment: created again where it was, it would state them twice', async () => {
    const { companyId, plans, plain, created, liveStatements } = await companyWithMovingPlan('Moving a paid plan', [])
    const [april] = await liveStatements()
    const paid = await h.admin(`/admin/companies/${companyId}/statements/${april.id}`, { method: 'PATCH', body: { status: 'paid' } })
    expect(paid.status, paid.text).toBe(200)
    const before = await liveStatements()

    // Moved, its paid April stayed in live under a plan of the sandbox, and a live plan created under its name (a new id,
    // the name being free in live) stated April again beside it.
    const moved = await h.admin(`${plans}/${created.body.plan.id}`, {
      method: 'PUT',
      body: { ...plain, name: 'Moving', environment: 'sandbox' },
    })
    expect(moved.status, moved.text).toBe(400)
    expect(moved.body.errors).toEqual([expect.objectContaining({ error: 'ConflictError', resource: 'environment' })])
    expect(await liveStatements()).toEqual(before)
  })

  it('lets a plan of its name take over the paid statements an earlier version left behind once the plan that left them is deleted', async () => {
    const { plans, plain, plan, paidApril, liveStatements } = await planMovedAwayFromItsPaidApril('Deleted away from its paid April')
    expect(await h.admin(`${plans}/${plan.id}`, { method: 'DELETE' })).toMatchObject({ status: 204 })
    const again = await h.admin(plans, { method: 'POST', body: { ...plain, name: 'Moving' } })
    expect(again.status, again.text).toBe(201)
    expect(again.body.plan.id).toBe(plan.id)
    // April stays as it was paid, stated once; May is stated again from the live deals.
    expect(await liveStatements()).toEqual([paidApril, expect.objectContaining({ date: '2026-05-01' })])
  })

  it("refuses to move a plan into the environment of a deleted plan's paid statements under its name: it would state them twice", async () => {
    const { companyId, plans, plain, created, liveStatements } = await companyWithMovingPlan('Moving onto a deleted plan', [
      deal('S-1', 'ann@planned.example', '2026-04-12T10:00:00Z', 1_000),
    ])
    const [april] = await liveStatements()
    const paid = await h.admin(`/admin/companies/${companyId}/statements/${april.id}`, { method: 'PATCH', body: { status: 'paid' } })
    expect(paid.status, paid.text).toBe(200)
    expect((await h.admin(`${plans}/${created.body.plan.id}`, { method: 'DELETE' })).status).toBe(204)
    const before = await liveStatements()
    expect(before.map((row: { id: string }) => row.id)).toEqual([april.id])

    // Created in the sandbox, it is another plan (a new id); moved to live, it stated April beside the paid one.
    const sandbox = await h.admin(plans, { method: 'POST', body: { ...plain, name: 'Moving', environment: 'sandbox' } })
    expect(sandbox.status, sandbox.text).toBe(201)
    const moved = await h.admin(`${plans}/${sandbox.body.plan.id}`, { method: 'PUT', body: { ...plain, name: 'Moving' } })
    expect(moved.status, moved.text).toBe(400)
    expect(moved.body.errors).toEqual([expect.objectContaining({ error: 'ConflictError', resource: 'environment' })])
    expect(await liveStatements()).toEqual(before)
  })

  it('moves a plan that an earlier version moved away from its paid statements back to them, and no further while they stay', async () => {
    const { plans, plain, plan, paidApril, liveStatements } = await planMovedAwayFromItsPaidApril('Moved away from its paid April')
    // A live plan of its name would state April a second time beside it: refused, created or renamed.
    const beside = await h.admin(plans, { method: 'POST', body: { ...plain, name: 'Moving' } })
    expect(beside.status, beside.text).toBe(400)
    expect(beside.body.errors).toEqual([
      expect.objectContaining({
        error: 'ConflictError',
        resource: 'name',
        description: expect.stringContaining(
          `statements of plan Moving (id ${plan.id}), now of sandbox, are stated under the name Moving in live`,
        ),
      }),
    ])
    const other = await h.admin(plans, { method: 'POST', body: { ...plain, name: 'Other' } })
    expect(other.status, other.text).toBe(201)
    const renamed = await h.admin(`${plans}/${other.body.plan.id}`, { method: 'PUT', body: { ...plain, name: 'Moving' } })
    expect(renamed.status, renamed.text).toBe(400)
    expect(renamed.body.errors).toEqual([expect.objectContaining({ error: 'ConflictError', resource: 'name' })])
    expect(await h.admin(`${plans}/${other.body.plan.id}`, { method: 'DELETE' })).toMatchObject({ status: 204 })
    expect(await liveStatements()).toEqual([paidApril])

    const back = await h.admin(`${plans}/${plan.id}`, { method: 'PUT', body: { ...plain, name: 'Moving' } })
    expect(back.status, back.text).toBe(200)
    // April stays as it was paid; May is stated again from the live deals.
    expect(await liveStatements()).toEqual([paidApril, expect.objectContaining({ date: '2026-05-01' })])

    const away = await h.admin(`${plans}/${plan.id}`, { method: 'PUT', body: { ...plain, name: 'Moving', environment: 'sandbox' } })
    expect(away.status, away.text).toBe(400)
    expect(away.body.errors).toEqual([
      expect.objectContaining({
        error: 'ConflictError',
        resource: 'environment',
        description: expect.stringContaining("the plan's paid statements are of live (period 2026-04)"),
      }),
    ])
  })

  it('lists plans as defined, replaces one and recalculates, deletes one and its pending results', async () => {
    const listed = await h.admin(`/admin/companies/${h.companyId}/plans`)
    expect(listed.status).toBe(200)
    expect(listed.body.data).toEqual([{ ...salesPlan(), id: expect.any(String), environment: 'live', filters: [], tier_mode: 'whole' }])
    const planId = listed.body.data[0].id

    // What GET shows can be sent back as it is, its id included; another plan's id is refused.
    const asListed = await h.admin(`/admin/companies/${h.companyId}/plans/${planId}`, { method: 'PUT', body: listed.body.data[0] })
    expect(asListed.status).toBe(200)
    expect(asListed.body.calculation).toMatchObject({ statements_written: 0, lines_written: 0 })
    const otherId = await h.admin(`/admin/companies/${h.companyId}/plans/${planId}`, {
      method: 'PUT',
      body: { ...listed.body.data[0], id: '0123456789abcdef01234567', rate: 0.5 },
    })
    expect(otherId.status).toBe(400)
    expect(otherId.body.errors).toEqual([expect.objectContaining({ resource: 'id' })])

    const replaced = await h.admin(`/admin/companies/${h.companyId}/plans/${planId}`, {
      method: 'PUT',
      body: { ...salesPlan(), rate: 0.07 },
    })
    expect(replaced.status).toBe(200)
    expect(replaced.body.plan).toMatchObject({ id: planId, rate: 0.07 })
    // The pending cells are recalculated (May: 6,000 × 7 %; June, a target without deals, states the same), the paid
    // April one is not.
    expect(replaced.body.calculation).toMatchObject({ cells: 2, statements_written: 1, problems: [] })
    const statements = await h.walk(h.statementsPath)
    expect(byDateOf(statements, '2026-05-01')[0]['standard.total_commission'].value).toBe(420)
    expect(byDateOf(statements, '2026-04-01')[0]['standard.total_commission'].value).toBe(250)

    const deleted = await h.admin(`/admin/companies/${h.companyId}/plans/${planId}`, { method: 'DELETE' })
    expect(deleted.status).toBe(204)
    const left = await h.walk(h.statementsPath)
    expect(left.map((row) => row['standard.date'])).toEqual(['2026-04-01'])
    expect((await h.walk(h.recordsPath)).map(dealOf)).toEqual(['Deal D-0'])
  })

  it('moves a plan to another table: the lines of the one it left go, but for its paid cells, and are never counted again', async () => {
    const deals = (await h.server.store.dataTables.getByKey(h.companyId, 'live', 'deals'))!
    await h.server.store.dataTables.insert({ ...deals, id: newId(), key: 'renewals', name: 'Renewals' })
    const posted = await h.call('/v1/tables/renewals/records/bulk', { method: 'POST', body: renewal(1_000) })
    expect(posted.status).toBe(200)
    await h.worker.drain()
    const planId = (await h.admin(`/admin/companies/${h.companyId}/plans`)).body.data[0].id

    const moved = await h.admin(`/admin/companies/${h.companyId}/plans/${planId}`, {
      method: 'PUT',
      body: { ...salesPlan(), data_table: 'renewals' },
    })
    expect(moved.status).toBe(200)
    // May: 1,000 of a 10,000 target, at the base rate. Of the deals' lines, the paid April cell's stays; May's goes.
    const may = async () => byDateOf(await h.walk(h.statementsPath), '2026-05-01')[0]['standard.total_commission'].value
    expect(await may()).toBe(50)
    expect((await h.walk(h.recordsPath)).map(dealOf)).toEqual(['Deal D-0'])

    // A change of the renewal recalculates its cell from its records alone: D-1's former line is not one of them.
    const changed = await h.call('/v1/tables/renewals/records/bulk', { method: 'POST', body: renewal(1_200) })
    expect(changed.status).toBe(200)
    await h.worker.drain()
    expect(await may()).toBe(60)
  })

  it('refuses to move a statement of a deleted plan back to pending, where no calculation would ever state or remove it', async () => {
    const planId = (await h.admin(`/admin/companies/${h.companyId}/plans`)).body.data[0].id
    const april = byDateOf(await h.walk(h.statementsPath), '2026-04-01')[0]
    expect((await h.admin(`/admin/companies/${h.companyId}/plans/${planId}`, { method: 'DELETE' })).status).toBe(204)
    // Nothing of the edit is applied: not the payment it also gives.
    const reopened = await h.admin(`/admin/companies/${h.companyId}/statements/${april['standard.id']}`, {
      method: 'PATCH',
      body: { status: 'pending', payment: 5 },
    })
    expect(reopened.status).toBe(400)
    expect(reopened.body.errors).toEqual([expect.objectContaining({ error: 'ConflictError', resource: 'status' })])
    expect(byDateOf(await h.walk(h.statementsPath), '2026-04-01')[0]).toEqual(april)
  })

  it('a plan deleted and created again under its name keeps the paid cells it had: they are not stated a second time', async () => {
    const planId = (await h.admin(`/admin/companies/${h.companyId}/plans`)).body.data[0].id
    const april = byDateOf(await h.walk(h.statementsPath), '2026-04-01')[0]
    expect(april['standard.status']).toBe('paid')
    expect((await h.admin(`/admin/companies/${h.companyId}/plans/${planId}`, { method: 'DELETE' })).status).toBe(204)

    const created = await h.admin(`/admin/companies/${h.companyId}/plans`, { method: 'POST', body: salesPlan() })
    expect(created.status).toBe(201)
    // It takes the deleted plan's id: its paid April cell is its own, frozen, as for a plan replaced.
    expect(created.body.plan.id).toBe(planId)
    const statements = await h.walk(h.statementsPath)
    expect(statements.map((row) => row['standard.date']).toSorted()).toEqual(['2026-04-01', '2026-05-01', '2026-06-01'])
    expect(byDateOf(statements, '2026-04-01')).toEqual([april])
    expect((await h.walk(h.recordsPath)).map(dealOf).toSorted()).toEqual(['Deal D-0', 'Deal D-1'])

    // Of another frequency it would state the paid month again inside a quarter of its own: refused, replaced or
    // created again, and nothing changes.
    const quarterly = { ...salesPlan(), frequency: 'quarterly', quota: undefined, tiers: [], metrics: {} }
    const replaced = await h.admin(`/admin/companies/${h.companyId}/plans/${planId}`, { method: 'PUT', body: quarterly })
    expect(replaced.status).toBe(400)
    expect(replaced.body.errors).toEqual([expect.objectContaining({ error: 'ConflictError', resource: 'frequency' })])
    // A replacement that keeps its frequency goes through, frozen cells or not, even beside a paid cell of another
    // frequency (a store where an earlier version let the plan's frequency change under it).
    const [paidApril] = (await h.server.store.statements.findOfPlan(h.companyId, planId)).filter((row) => row.status === 'paid')
    const legacy = { ...paidApril, id: newId(), period: '2026-Q2', date: '2026-04-01' }
    await h.server.store.statements.save([legacy])
    const sameFrequency = await h.admin(`/admin/companies/${h.companyId}/plans/${planId}`, {
      method: 'PUT',
      body: { ...salesPlan(), rate: 0.06 },
    })
    expect(sameFrequency.status, sameFrequency.text).toBe(200)
    await h.server.store.statements.deleteMany(h.companyId, [legacy.id])
    expect((await h.admin(`/admin/companies/${h.companyId}/plans/${planId}`, { method: 'DELETE' })).status).toBe(204)
    const recreated = await h.admin(`/admin/companies/${h.companyId}/plans`, { method: 'POST', body: quarterly })
    expect(recreated.status).toBe(400)
    expect(recreated.body.errors).toEqual([expect.objectContaining({ resource: 'frequency' })])
    expect(byDateOf(await h.walk(h.statementsPath), '2026-04-01')).toEqual([april])
    expect((await h.admin(`/admin/companies/${h.companyId}/plans`, { method: 'POST', body: salesPlan() })).status).toBe(201)

    // And its statement can be moved back to pending: a plan calculates it again.
    const reopened = await h.admin(`/admin/companies/${h.companyId}/statements/${april['standard.id']}`, {
      method: 'PATCH',
      body: { status: 'pending' },
    })
    expect(reopened.status, reopened.text).toBe(200)
    expect(reopened.body.status).toBe('pending')
  })

  it('creates a plan with a filter and calculates it at once; refuses one that names what does not exist', async () => {
    const plan = {
      ...salesPlan(),
      name: 'New business',
      frequency: 'quarterly',
      quota: undefined,
      tiers: [],
      metrics: {},
      rate: 0.01,
      filters: [{ field: 'deal_types', contains: 'new' }],
    }
    await h.upsertDeals([
      {
        id: 'D-7',
        name: 'Deal D-7',
        owner_id: 'ann@planned.example',
        close_date: '2026-05-05',
        amount: 3_000,
        amount_currency: 'EUR',
        deal_types: 'new;upsell',
      },
    ])
    const created = await h.admin(`/admin/companies/${h.companyId}/plans`, { method: 'POST', body: plan })
    expect(created.status).toBe(201)
    expect(created.body.calculation).toMatchObject({ cells: 1, statements_written: 1, lines_written: 1 })
    const quarter = (await h.walk(h.statementsPath)).filter(
      (row) => row['standard.date'] === '2026-04-01' && row['standard.total_commission'].value === 30,
    )
    expect(quarter).toHaveLength(1)

    const wrong = {
      ...plan,
      name: 'Wrong',
      data_table: 'deals',
      amount_field: 'name',
      quota: 'Nope',
      filters: [
        { field: 'name', contains: 'x' },
        { field: 'amount', in: ['3000'] },
      ],
    }
    const refused = await h.admin(`/admin/companies/${h.companyId}/plans`, { method: 'POST', body: wrong })
    expect(refused.status).toBe(400)
    expect(refused.body.errors.map((error: { resource: string }) => error.resource).toSorted()).toEqual([
      'amount_field',
      'filters/0/contains',
      'filters/1/in',
      'quota',
    ])
    const taken = await h.admin(`/admin/companies/${h.companyId}/plans`, { method: 'POST', body: plan })
    expect(taken.status).toBe(400)
    expect(taken.body.errors[0]).toMatchObject({ resource: 'name' })
  })

  it('reports a plan that an earlier version took with an in filter on an amount field, until a replacement drops it', async () => {
    const problemsPath = `/admin/companies/${h.companyId}/calculation-problems`
    expect((await h.admin(problemsPath)).body.data[0].problems).toEqual([])
    // Saved by a version before 2026-11-28, which took such a filter: it never held, and the plan stated nothing.
    const { store } = h.server
    const [plan] = await store.plans.list(h.companyId)
    await store.plans.save([{ ...plan, filters: [{ field: 'amount', in: ['3000'] }] }])

    const problems = await h.admin(problemsPath)
    expect(problems.status).toBe(200)
    expect(problems.body.data).toEqual([
      {
        plan_id: plan.id,
        plan: 'Sales plan',
        problems: [{ plan: 'Sales plan', message: expect.stringMatching(/^its definition, filters\/0\/in: amount is an amount field; /) }],
      },
    ])

    const replaced = await h.admin(`/admin/companies/${h.companyId}/plans/${plan.id}`, { method: 'PUT', body: salesPlan() })
    expect(replaced.status, replaced.text).toBe(200)
    expect((await h.admin(problemsPath)).body.data[0].problems).toEqual([])
  })

  it("takes a filter's value in the form a record's value is stored in, and reports one an earlier version saved as written", async () => {
    const plans = `/admin/companies/${h.companyId}/plans`
    const { quota: _quota, tiers: _tiers, metrics: _metrics, ...plain } = salesPlan()
    // D-1 closed at 2026-05-10T10:00:00Z, stored as 2026-05-10T10:00:00.000Z.
    const body = { ...plain, name: 'May 10', filters: [{ field: 'close_date', in: ['2026-05-10T12:00:00+02:00'] }] }
    const created = await h.admin(plans, { method: 'POST', body })
    expect(created.status, created.text).toBe(201)
    expect(created.body.plan.filters).toEqual([{ field: 'close_date', in: ['2026-05-10T10:00:00.000Z'] }])
    expect(created.body.calculation).toMatchObject({ cells: 1, lines_written: 1 })
    const refused = await h.admin(plans, {
      method: 'POST',
      body: { ...body, name: 'Never', filters: [{ field: 'close_date', in: ['May 10'] }] },
    })
    expect(refused.status).toBe(400)
    expect(refused.body.errors).toEqual([expect.objectContaining({ resource: 'filters/0/in/0' })])

    // Saved as written by a version before 2026-11-29, the value never held.
    const { store } = h.server
    const plan = (await store.plans.get(h.companyId, created.body.plan.id))!
    await store.plans.save([{ ...plan, filters: [{ field: 'close_date', in: ['2026-05-10T10:00:00Z'] }] }])
    const problems = await h.admin(`/admin/companies/${h.companyId}/calculation-problems`)
    expect(problems.body.data.find((one: { plan: string }) => one.plan === 'May 10').problems).toEqual([
      {
        plan: 'May 10',
        message: expect.stringMatching(
          /^its definition, filters\/0\/in\/0: "2026-05-10T10:00:00Z" is compared as written, .* takes it as "2026-05-10T10:00:00.000Z"; /,
        ),
      },
    ])
  })

  it('reports a currency without a rate, and calculates it once the rate is set', async () => {
    await h.upsertDeals([
      {
        id: 'D-8',
        name: 'Deal D-8',
        owner_id: 'ann@planned.example',
        close_date: '2026-06-03',
        amount: 1_000,
        amount_currency: 'USD',
        deal_types: 'new',
      },
    ])
    const [june] = byDateOf(await h.walk(h.statementsPath), '2026-06-01')
    expect(june['standard.total_commission']).toBeNull()
    const problems = await h.admin(`/admin/companies/${h.companyId}/calculation-problems`)
    expect(problems.body.data[0].problems).toEqual([
      expect.objectContaining({ period: '2026-06', message: expect.stringContaining('USD') }),
    ])
    // Another deal in the same month does not hide the one that cannot be converted.
    await h.upsertDeals([
      {
        id: 'D-10',
        name: 'Deal D-10',
        owner_id: 'ann@planned.example',
        close_date: '2026-06-04',
        amount: 1_100,
        amount_currency: 'EUR',
        deal_types: 'new',
      },
    ])
    expect(byDateOf(await h.walk(h.statementsPath), '2026-06-01')[0]['standard.total_commission']).toBeNull()

    const set = await h.admin(`/admin/companies/${h.companyId}/exchange-rates`, { method: 'PUT', body: { USD: 0.9 } })
    expect(set.status).toBe(200)
    expect(set.body.exchange_rates).toEqual({ USD: 0.9 })
    const [juneAfter] = byDateOf(await h.walk(h.statementsPath), '2026-06-01')
    // 1,000 USD = 900 EUR, and 1,100 EUR: 20 % of the target, 5 % = 100.
    expect(juneAfter['standard.total_commission']).toEqual({ value: 100, currency: 'EUR' })
    for (const body of [{ USD: 0 }, { USD: true }, { USD: '0.9' }, { USD: null }]) {
      const bad = await h.admin(`/admin/companies/${h.companyId}/exchange-rates`, { method: 'PUT', body })
      expect(bad.status, JSON.stringify(body)).toBe(400)
    }
    expect((await h.server.store.companies.get(h.companyId))?.exchange_rates).toEqual({ USD: 0.9 })
  })

  it('recalculates a cell whose quota value changes, and a statement moved back to pending from its deals as they are', async () => {
    const store = h.server.store
    const [quota] = await store.quotas.list(h.companyId)
    const [mayValue] = (await store.quotaValues.page(h.companyId, quota.id, { limit: 10 })).filter((value) => value.period === '2026-05')
    const edited = await h.admin(`/admin/companies/${h.companyId}/quota-values/${mayValue.id}`, { method: 'PATCH', body: { value: 5_000 } })
    expect(edited.status).toBe(200)
    // 6,000 of 5,000: 120 %, gold: 600.
    const [may] = byDateOf(await h.walk(h.statementsPath), '2026-05-01')
    expect(may).toMatchObject({ 'standard.total_commission': { value: 600, currency: 'EUR' }, 'custom.tier': 'gold' })

    // While April is paid, its deal changes and another deal comes into it: what was paid stays as it was.
    await h.upsertDeals([
      { id: 'D-0', name: 'Deal D-0', owner_id: 'ann@planned.example', close_date: '2026-04-10', amount: 1_000, amount_currency: 'EUR' },
      { id: 'D-11', name: 'Deal D-11', owner_id: 'ann@planned.example', close_date: '2026-04-20', amount: 2_000, amount_currency: 'EUR' },
    ])
    const [april] = byDateOf(await h.walk(h.statementsPath), '2026-04-01')
    expect(april['standard.total_commission']).toEqual({ value: 250, currency: 'EUR' })
    expect((await h.walk(h.recordsPath)).map(dealOf).toSorted()).toEqual(['Deal D-0', 'Deal D-1'])

    const reopened = await h.admin(`/admin/companies/${h.companyId}/statements/${april['standard.id']}`, {
      method: 'PATCH',
      body: { status: 'pending', payment: 1 },
    })
    expect(reopened.status).toBe(200)
    // Back to pending, the cell is calculated again from its deals as they are now (3,000 of 10,000 at 5 %): the
    // edited payment does not stay, and neither do the figures of what was paid.
    expect(reopened.body).toMatchObject({ status: 'pending', payment: 150 })
    // The calculation's exact sums it now holds again are its own: not served.
    expect(reopened.body).not.toHaveProperty('sums')
    const lines = (await h.walk(h.recordsPath)).filter((line) => dealOf(line) !== 'Deal D-1')
    expect(lines.map((line) => [dealOf(line), line['standard.commission_impact'].value, line['datatable.amount']]).toSorted()).toEqual([
      ['Deal D-0', 50, { value: 1_000, currency: 'EUR' }],
      ['Deal D-11', 100, { value: 2_000, currency: 'EUR' }],
    ])
  })

  it("stamps an import's calculated rows once its payloads are applied, not when its transaction began", async () => {
    // A clock that moves a second at every reading: what is read later is stamped later.
    let readings = 0
    const ticking = { now: () => new Date(h.server.clock.now().getTime() + ++readings * 1000) }
    const posted = await h.call('/v1/tables/deals/records/bulk', {
      method: 'POST',
      body: [deal('D-20', 'ann@planned.example', '2026-05-20', 1_000)],
    })
    await new ImportWorker({ store: h.server.store, clock: ticking, owner: 'ticking' }).drain()
    const { finished_at: began } = (await h.call(`/v1/imports/${posted.body.import_id}`)).body.data_import
    // The import's time is its transaction's first reading; its line was stamped after (the bound is exclusive).
    const after = await h.walk(`${h.recordsPath}?last_modified_after=${began}`)
    expect(after.map(dealOf)).toEqual(['Deal D-20'])
  })

  it('rewrites nothing for an all=true resync of the same records: the same lines, with the same ids, unchanged', async () => {
    const before = { statements: await h.walk(h.statementsPath), lines: await h.walk(h.recordsPath) }
    expect(before.lines.length).toBeGreaterThan(0)
    h.server.clock.advance(60_000)
    const records = plannedCompany().data_tables[0].records
    const posted = await h.call('/v1/tables/deals/records/bulk?all=true', { method: 'POST', body: records })
    expect(posted.status).toBe(200)
    await h.worker.drain()
    expect((await h.call(`/v1/imports/${posted.body.import_id}`)).body.data_import).toMatchObject({ status: 'finished', error: false })
    expect({ statements: await h.walk(h.statementsPath), lines: await h.walk(h.recordsPath) }).toEqual(before)
  })

  it('recalculates the plans of a quota whose type changes: no amount quota, no target; back, the targets again', async () => {
    const [quota] = await h.server.store.quotas.list(h.companyId)
    const mayOf = async () => byDateOf(await h.walk(h.statementsPath), '2026-05-01')[0]
    // 6,000 of 10,000: 60 %, the base rate: 300.
    expect(await mayOf()).toMatchObject({ 'standard.total_commission': { value: 300, currency: 'EUR' }, 'custom.attainment': 0.6 })
    const changeType = (type: string) => h.admin(`/admin/companies/${h.companyId}/quotas/${quota.id}`, { method: 'PATCH', body: { type } })
    expect((await changeType('float')).status).toBe(200)
    // A float quota gives the plan no target: the base rate, with no attainment.
    expect(await mayOf()).toMatchObject({ 'standard.total_commission': { value: 300, currency: 'EUR' }, 'custom.attainment': null })
    // The dry run names the quota in each cell it gives no target, not in the plan's definition: saved by this version
    // with an amount quota, the plan reads a quota whose type changed since, which no replacement of it puts right.
    const problems = await h.admin(`/admin/companies/${h.companyId}/calculation-problems`)
    expect(problems.body.data[0].problems).toEqual(
      ['2026-04', '2026-05', '2026-06'].map((period) =>
        expect.objectContaining({ period, message: expect.stringContaining('of type float') }),
      ),
    )
    // A deal added now is priced as the whole cell is: 12,000 would be gold with a target, and is the base rate without.
    await h.upsertDeals([
      { id: 'D-12', name: 'Deal D-12', owner_id: 'ann@planned.example', close_date: '2026-05-20', amount: 6_000, amount_currency: 'EUR' },
    ])
    expect(await mayOf()).toMatchObject({ 'standard.total_commission': { value: 600, currency: 'EUR' }, 'custom.tier': null })
    expect((await changeType('amount')).status).toBe(200)
    // 12,000 of 10,000: 120 %, gold 10 % of every deal: 1,200.
    expect(await mayOf()).toMatchObject({ 'standard.total_commission': { value: 1_200, currency: 'EUR' }, 'custom.tier': 'gold' })
  })

  it('refuses an edit of a metric a plan writes that its values would no longer fit, and takes one they still fit', async () => {
    const before = await metrics()
    for (const [key, body, resource] of [
      ['tier', { enum_values: ['silver'] }, 'enum_values'],
      ['tier', { kind: 'text' }, 'kind'],
      ['attainment', { kind: 'date' }, 'kind'],
      ['bonus', { kind: 'float' }, 'kind'],
    ] as const) {
      const refused = await editMetric(key, body)
      expect(refused.status, `${key} ${JSON.stringify(body)}`).toBe(400)
      expect(refused.body.errors).toEqual([{ error: 'ValidationError', resource, description: expect.stringContaining('Sales plan') }])
    }
    expect(await metrics()).toEqual(before)
    expect((await editMetric('tier', { enum_values: ['silver', 'gold', 'platinum'] })).status).toBe(200)
    expect((await editMetric('attainment', { kind: 'float' })).status).toBe(200)
  })
})

describe('an edit of a metric racing a plan that starts writing it', () => {
  it('is refused when the plan, saved by another process while the edit is checked, writes values the edit would not fit', async () => {
    const { store, dispose } = await openTestStore()
    try {
      const clock = new ManualClock()
      const fixture = plannedCompany()
      const { metrics: writes, ...plan } = fixture.plans[0]
      const { company_id: companyId } = await loadFixture(store, clock, { ...fixture, plans: [{ ...plan, name: 'Quiet plan' }] })
      // Another process saves a plan writing `attainment` while the edit is under way: after the edit has read the
      // plans when it reads them outside its transaction, else just before its transaction.
      let saved: Promise<unknown> | null = null
      const saveOnce = () => (saved ??= savePlan(store, clock, companyId, { ...plan, metrics: writes } as FixturePlan))
      const racing: Store = {
        ...store,
        plans: {
          ...store.plans,
          async list(id) {
            const plans = await store.plans.list(id)
            await saveOnce()
            return plans
          },
        },
        transaction: async (work, options) => {
          await saveOnce()
          return store.transaction(work, options)
        },
      }

      const error = await reviseMetric(racing, clock, companyId, 'attainment', { kind: 'date' }).catch((thrown: unknown) => thrown)
      expect(error).toBeInstanceOf(ValidationError)
      expect((error as ValidationError).issues).toEqual([{ resource: 'kind', description: expect.stringContaining('Sales plan') }])
      expect((await store.metrics.list(companyId)).find((metric) => metric.api_key === 'attainment')?.kind).toBe('percentage')
    } finally {
      await dispose()
    }
  })
})

/**
 * A company whose deals table is in both environments (the sandbox's with `sandboxDeals`), and a plain live plan
 * 'Moving' on it, without quota, tiers or metrics; with how to read its live statements.
 */
/**
 * A plan whose April is paid, moved to the sandbox as a version before 2026-11-28 moved it: its paid April stayed in
 * live, and its pending May, of no sandbox deal, went.
 */
async function planMovedAwayFromItsPaidApril(name: string) {
  const { companyId, plans, plain, created, liveStatements } = await companyWithMovingPlan(name, [])
  const [april] = await liveStatements()
  const paid = await h.admin(`/admin/companies/${companyId}/statements/${april.id}`, { method: 'PATCH', body: { status: 'paid' } })
  expect(paid.status, paid.text).toBe(200)
  const paidApril = (await liveStatements())[0]
  const { store } = h.server
  const plan = (await store.plans.get(companyId, created.body.plan.id))!
  const sandboxDeals = (await store.dataTables.getByKey(companyId, 'sandbox', 'deals'))!
  await store.plans.save([{ ...plan, environment: 'sandbox', table_id: sandboxDeals.id }])
  const [may] = (await store.statements.findOfPlan(companyId, plan.id)).filter((statement) => statement.status === 'pending')
  await store.statements.deleteMany(companyId, [may.id])
  expect(await liveStatements()).toEqual([paidApril])
  return { companyId, plans, plain, plan, paidApril, liveStatements }
}

async function companyWithMovingPlan(name: string, sandboxDeals: ReturnType<typeof deal>[]) {
  const fixture = plannedCompany()
  const { companyId, apiKey } = await h.server.load({
    ...fixture,
    company: { name, default_currency: 'EUR' },
    data_tables: [...fixture.data_tables, { ...fixture.data_tables[0], environment: 'sandbox', records: sandboxDeals }],
    plans: [],
    closed_periods: [],
  })
  const plans = `/admin/companies/${companyId}/plans`
  const { quota: _quota, tiers: _tiers, metrics: _metrics, ...plain } = salesPlan()
  const created = await h.admin(plans, { method: 'POST', body: { ...plain, name: 'Moving' } })
  expect(created.status, created.text).toBe(201)
  const liveStatements = async () => (await h.server.call('/v1/reporting', { key: apiKey })).body.data
  return { companyId, plans, plain, created, liveStatements }
}
