import { describe, expect, it } from 'vitest'
import { ManualClock } from '../src/clock.ts'
import { ValidationError } from '../src/errors.ts'
import { loadFixture, reloadFixture } from '../src/fixtures/load-fixture.ts'
import { resetCompany } from '../src/admin/reset.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { openTestStore } from './helpers/test-store.ts'

/** The paths of the problems a fixture is refused for; a refused fixture writes nothing. */
async function problemsOf(fixture: unknown): Promise<string[]> {
  const { store, dispose } = await openTestStore()
  const error: unknown = await loadFixture(store, new ManualClock(), fixture).then(
    () => null,
    (thrown: unknown) => thrown,
  )
  const companies = await store.companies.list()
  await dispose()
  expect(error).toBeInstanceOf(ValidationError)
  expect(companies).toEqual([])
  return (error as ValidationError).issues.map((issue) => issue.resource)
}

/** How many turns the event loop gets while `work` runs. */
async function turnsDuring(work: () => Promise<unknown>): Promise<number> {
  let turns = 0
  let working = true
  const tick = (): void => {
    turns++
    if (working) setImmediate(tick)
  }
  setImmediate(tick)
  await work()
  working = false
  return turns
}

describe('loading a fixture', () => {
  it('loads the whole company, with explicit modification times kept', async () => {
    const { store, dispose } = await openTestStore()
    const clock = new ManualClock('2026-05-05T05:05:05.000Z')
    const { company_id: id, api_keys: keys } = await loadFixture(store, clock, smallFixture())
    expect(keys).toHaveLength(2)
    expect(await store.users.count(id)).toBe(3)
    const statements = await store.statements.page(id, 'live', { limit: 10 })
    expect(statements.map((statement) => statement.modified_at)).toEqual([
      '2026-02-01T10:00:00.000Z',
      '2026-02-02T10:00:00.000Z',
      '2026-03-01T10:00:00.000Z',
    ])
    const [sandboxStatement] = await store.statements.page(id, 'sandbox', { limit: 10 })
    expect(sandboxStatement.modified_at).toBe('2026-05-05T05:05:05.000Z')
    const [deals] = (await store.dataTables.list(id)).filter((table) => table.environment === 'live')
    const records = await store.records.list(id, deals.id, { offset: 0, limit: 10 })
    expect(records[0].values).toEqual({
      deal_id: 'D-1',
      deal_name: 'First deal',
      amount: { value: 1000, currency: 'EUR' },
      deal_types: ['new', 'upsell'],
    })
    await dispose()
  })

  it('refuses overlapping manager and group attributions of one user', async () => {
    const fixture = smallFixture()
    fixture.managers = [
      { user: 'rep@acme.example', manager: 'owner@acme.example', start_date: '2025-01', end_date: null },
      { user: 'rep@acme.example', manager: 'gone@acme.example', start_date: '2025-06', end_date: '2025-08' },
      { user: 'owner@acme.example', manager: 'gone@acme.example', start_date: '2025-06', end_date: null },
    ]
    fixture.groups = [
      { user: 'rep@acme.example', group_dimension: 'team', group: 'North', start_date: '2025-01', end_date: '2025-05' },
      { user: 'rep@acme.example', group_dimension: 'team', group: 'South', start_date: '2025-06', end_date: null },
      { user: 'rep@acme.example', group_dimension: 'region', group: 'EU', start_date: '2025-03', end_date: null },
      { user: 'rep@acme.example', group_dimension: 'team', group: 'East', start_date: '2025-05', end_date: '2025-05' },
    ]
    expect(await problemsOf(fixture)).toEqual(['/managers/1', '/groups/3'])
  })

  it('reports duplicated keys, unknown references and bad values, each with its path', async () => {
    const fixture = smallFixture() as any
    fixture.user_attributes.push({ api_key: 'region', name: 'Again', type: 'string' })
    fixture.users[1].attributes = { nickname: 'R' }
    fixture.reporting_structures[0].metrics.push('missing_metric')
    fixture.statements[0].metrics.tier = 'platinum'
    fixture.data_tables[0].records.push({ deal_id: 'D-1', deal_name: 'Again' })
    fixture.data_tables[0].records.push({ deal_name: 'No id', amount: 'lots' })
    // An import ignores a key its table does not know; a fixture, written for its tables, reports it.
    fixture.data_tables[0].records.push({ deal_id: 'D-7', colour: 'red' })
    fixture.commission_lines[0].record = 'D-404'
    fixture.quotas[0].values.push({ user: 'owner@acme.example', period: '2026-01', value: 1 })
    expect(await problemsOf(fixture)).toEqual([
      '/user_attributes/2/api_key',
      '/users/1/attributes/nickname',
      '/data_tables/0/records/2/deal_id',
      '/data_tables/0/records/3/deal_id',
      '/data_tables/0/records/3/amount',
      '/data_tables/0/records/4/colour',
      '/reporting_structures/0/metrics/3',
      '/statements/0/metrics/tier',
      '/commission_lines/0/record',
      '/quotas/0/values/3',
    ])
  })

  it('gives the event loop turns while it plans and writes a large company, on a load and on a reset', async () => {
    const { store, dispose } = await openTestStore()
    try {
      const fixture = smallFixture()
      const [deals] = fixture.data_tables!
      const template = deals.records![0]
      deals.records = Array.from({ length: 5_000 }, (_, index) => ({ ...template, deal_id: `D-${index}` }))
      // No plan: the recalculation, which paces itself, is not what is checked here.
      delete (fixture as { plans?: unknown }).plans
      // With no budget, the work gives a turn wherever it may: at least one per record planned.
      let companyId = ''
      const loadTurns = await turnsDuring(async () => {
        companyId = (await loadFixture(store, new ManualClock(), fixture, { pacingMs: 0 })).company_id
      })
      const origin = (await store.companyOrigins.get(companyId))!
      const resetTurns = await turnsDuring(() => reloadFixture(store, origin, { pacingMs: 0 }))
      expect(await store.records.count(companyId, (await store.dataTables.list(companyId))[0].id)).toBe(5_000)
      expect(loadTurns).toBeGreaterThan(5_000)
      expect(resetTurns).toBeGreaterThan(5_000)
    } finally {
      await dispose()
    }
  })

  it('resets a company loaded before a rule that would refuse its fixture now (rates of its default currency)', async () => {
    const { store, dispose } = await openTestStore()
    try {
      const { company_id: companyId } = await loadFixture(store, new ManualClock(), smallFixture())
      // Its origin as an earlier version kept it: a rate for its default currency, which a load now refuses.
      const origin = (await store.companyOrigins.get(companyId))!
      const fixture = origin.fixture as ReturnType<typeof smallFixture>
      await store.companyOrigins.save({ ...origin, fixture: { ...fixture, company: { ...fixture.company, exchange_rates: { EUR: 2 } } } })
      await expect(problemsOf({ ...fixture, company: { ...fixture.company, exchange_rates: { EUR: 2 } } })).resolves.toEqual([
        '/company/exchange_rates/EUR',
      ])
      await resetCompany(store, companyId)
      expect((await store.companies.get(companyId))?.exchange_rates).toEqual({ EUR: 2 })
    } finally {
      await dispose()
    }
  })

  it("resets a company loaded before the rules on the keys of user attributes and table fields (a user's own field, an amount's currency)", async () => {
    const { store, dispose } = await openTestStore()
    try {
      const { company_id: companyId } = await loadFixture(store, new ManualClock(), smallFixture())
      const origin = (await store.companyOrigins.get(companyId))!
      const earlier = structuredClone(origin.fixture) as ReturnType<typeof smallFixture>
      earlier.user_attributes!.push(
        { api_key: 'country', name: 'Country (custom)', type: 'string' },
        { api_key: 'base_salary_currency', name: 'Salary currency (custom)', type: 'string' },
      )
      earlier.data_tables![0].fields.push({ api_key: 'amount_currency', name: 'Amount currency', type: 'string' })
      await store.companyOrigins.save({ ...origin, fixture: earlier })
      await expect(problemsOf(earlier)).resolves.toEqual([
        '/user_attributes/2/api_key',
        '/user_attributes/3/api_key',
        '/data_tables/0/fields/4/api_key',
      ])
      expect(await resetCompany(store, companyId)).toMatchObject({ reset: true })
      expect((await store.userAttributes.list(companyId)).map((attribute) => attribute.api_key)).toContain('country')
    } finally {
      await dispose()
    }
  })

  it('resets a company loaded before the rules on arrival dates, deleted records and quota names', async () => {
    const { store, dispose } = await openTestStore()
    try {
      const { company_id: companyId } = await loadFixture(store, new ManualClock(), smallFixture())
      const origin = (await store.companyOrigins.get(companyId))!
      const earlier = structuredClone(origin.fixture) as any
      earlier.users[1].arrival_date = '2026-02-30'
      earlier.data_tables[0].records[1].deleted = true
      earlier.quotas.push({ name: 'Monthly bookings', type: 'amount', frequency: 'monthly', values: [] })
      await store.companyOrigins.save({ ...origin, fixture: earlier })
      await expect(problemsOf(earlier)).resolves.toEqual(
        expect.arrayContaining(['/users/1/arrival_date', '/data_tables/0/records/1/deleted', `/quotas/${earlier.quotas.length - 1}/name`]),
      )
      const outcome = await resetCompany(store, companyId)
      expect(outcome).toMatchObject({ reset: true })
      expect(await store.quotas.list(companyId)).toHaveLength(earlier.quotas.length)
    } finally {
      await dispose()
    }
  })
})
