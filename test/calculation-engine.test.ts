import { describe, expect, it } from 'vitest'
import {
  addToCell,
  calculateCell,
  calculatePlan,
  type CompanySettings,
  commissionFor,
  placeRecord,
  type PlanResult,
  userDirectory,
} from '../src/calculation/engine.ts'
import { newId } from '../src/ids.ts'
import type { DataTableRecord, Plan, Quota, User } from '../src/store/model.ts'
import { aDataTable, aQuota, aRecord, aUser } from './store/builders.ts'

/** The engine alone: no store, no server. Every figure below is worked out by hand in the test's comment. */

const COMPANY_ID = newId()
const TABLE = aDataTable(COMPANY_ID)
const EUR: CompanySettings = { defaultCurrency: 'EUR', fiscalYearStartMonth: 1, exchangeRates: { USD: 0.9 } }

const ann = aUser(COMPANY_ID, { email: 'ann@acme.example', currency: 'EUR' })
const bob = aUser(COMPANY_ID, { email: 'bob@acme.example', currency: 'USD' })
const gone = aUser(COMPANY_ID, { email: 'gone@acme.example', status: 'archived', archived_until: '2026-02' })
const users = userDirectory([ann, bob, gone])

const quota: Quota = aQuota(COMPANY_ID, { type: 'amount', frequency: 'monthly', currency: 'EUR' })

function aPlan(overrides: Partial<Plan> = {}): Plan {
  return {
    id: newId(),
    company_id: COMPANY_ID,
    environment: 'live',
    name: 'Sales plan',
    table_id: TABLE.id,
    user_field: 'owner',
    date_field: 'close_date',
    amount_field: 'amount',
    frequency: 'monthly',
    rate: 0.05,
    filters: [],
    quota_id: quota.id,
    tiers: [
      { from: 0.8, rate: 0.06, name: 'silver' },
      { from: 1.1, rate: 0.1, name: 'gold' },
    ],
    tier_mode: 'whole',
    metrics: { attainment: 'attainment', tier: 'tier', bonus: 'bonus' },
    created_at: '2026-01-01T00:00:00.000Z',
    modified_at: '2026-01-01T00:00:00.000Z',
    ...overrides,
  }
}

let dealNumber = 0
function aDeal(owner: string, closeDate: string, amount: number, currency = 'EUR', more: Record<string, unknown> = {}): DataTableRecord {
  dealNumber += 1
  const externalId = `D-${dealNumber}`
  return aRecord(COMPANY_ID, TABLE.id, {
    external_id: externalId,
    values: { id: externalId, owner, close_date: closeDate, amount: { value: amount, currency }, ...more },
    overrides: {},
  })
}

function run(plan: Plan, records: DataTableRecord[], values: Record<string, number> = {}, company = EUR): PlanResult {
  return calculatePlan({ plan, records, users, quota: plan.quota_id ? quota : null, quotaValues: new Map(Object.entries(values)) }, company)
}

const cell = (result: PlanResult, user: User, period: string) => result.cells.get(`${user.id}|${period}`)

describe('the calculation engine', () => {
  it('pays the base rate below the first tier and states the attainment', () => {
    // 6,000 of a 10,000 target: 60 %, below silver (80 %): 5 % of 6,000 = 300.
    const result = run(aPlan(), [aDeal(ann.email, '2026-03-10', 6_000)], { [`${ann.id}|2026-03`]: 10_000 })
    const statement = cell(result, ann, '2026-03')?.statement
    expect(statement).toMatchObject({ date: '2026-03-01', plan: 'Sales plan', currency: 'EUR', payment: 300, achievement: 6_000 })
    expect(statement).toMatchObject({ target: 10_000, target_achievement: 0.6 })
    expect(statement?.metrics).toEqual({ attainment: 0.6, tier: null, bonus: { value: 0, currency: 'EUR' } })
  })

  it.each([
    // whole: the tier reached sets the rate of every deal. 9,000 + 3,000 = 12,000 of 10,000 = 120 % → gold 10 %.
    { mode: 'whole' as const, payment: 1_200, lines: [900, 300], tier: 'gold', bonus: 600 },
    // marginal: 8,000 at 5 % + 3,000 (80 % to 110 %) at 6 % + 1,000 over 110 % at 10 % = 400 + 180 + 100 = 680.
    // In date order, the 9,000 deal earns C(9,000) = 400 + 60 = 460, the 3,000 deal C(12,000) − C(9,000) = 220.
    { mode: 'marginal' as const, payment: 680, lines: [460, 220], tier: 'gold', bonus: 80 },
  ])('crossing tiers, $mode: each band at its rate', ({ mode, payment, lines, tier, bonus }) => {
    const deals = [aDeal(ann.email, '2026-03-02', 9_000), aDeal(ann.email, '2026-03-20', 3_000)]
    const result = run(aPlan({ tier_mode: mode }), deals, { [`${ann.id}|2026-03`]: 10_000 })
    const outcome = cell(result, ann, '2026-03')
    expect(outcome?.statement?.payment).toBe(payment)
    expect(outcome?.lines.map((line) => line.commission)).toEqual(lines)
    expect(outcome?.statement?.metrics).toMatchObject({ attainment: 1.2, tier, bonus: { value: bonus, currency: 'EUR' } })
  })

  it('marginal: a deal dated after the others never changes what they earned', () => {
    const plan = aPlan({ tier_mode: 'marginal' })
    const early = [aDeal(ann.email, '2026-03-02', 7_000), aDeal(ann.email, '2026-03-09', 2_500)]
    const late = aDeal(ann.email, '2026-03-30', 4_000)
    const values = { [`${ann.id}|2026-03`]: 10_000 }
    const before = cell(run(plan, early, values), ann, '2026-03')
    const after = cell(run(plan, [...early, late], values), ann, '2026-03')
    expect(after?.lines.slice(0, 2)).toEqual(before?.lines)
    // Before: C(9,500) = 8,000 × 5 % + 1,500 × 6 % = 490. The late deal takes the total from 9,500 to 13,500:
    // 1,500 at 6 % (up to 11,000) and 2,500 at 10 % = 90 + 250 = 340.
    expect(before?.statement?.payment).toBe(490)
    expect(after?.lines[2].commission).toBe(340)
    expect(after?.statement?.payment).toBe(830)
  })

  it('marginal: a credit note takes back at the rate of the band it falls into', () => {
    const plan = aPlan({ tier_mode: 'marginal' })
    const deals = [aDeal(ann.email, '2026-03-02', 12_000), aDeal(ann.email, '2026-03-05', -2_000)]
    const outcome = cell(run(plan, deals, { [`${ann.id}|2026-03`]: 10_000 }), ann, '2026-03')
    // 12,000 earns 680; back to 10,000 earns 520: the credit note is −160 (1,000 at 10 % and 1,000 at 6 %).
    expect(outcome?.lines.map((line) => line.commission)).toEqual([680, -160])
    expect(outcome?.statement?.payment).toBe(520)
  })

  it('states what reaching the target would pay: the on-target earning', () => {
    // At 100 % of 10,000: whole → silver 6 % = 600; marginal → 8,000 × 5 % + 2,000 × 6 % = 520.
    const deals = [aDeal(ann.email, '2026-03-02', 1_000)]
    const whole = cell(run(aPlan(), deals, { [`${ann.id}|2026-03`]: 10_000 }), ann, '2026-03')
    const marginal = cell(run(aPlan({ tier_mode: 'marginal' }), deals, { [`${ann.id}|2026-03`]: 10_000 }), ann, '2026-03')
    expect(whole?.statement?.on_target_earning).toBe(600)
    expect(marginal?.statement?.on_target_earning).toBe(520)
    expect(commissionFor(aPlan({ tier_mode: 'marginal' }), 10_000, 10_000)).toBeCloseTo(520, 9)
  })

  it('pays the base rate without a quota value, with the attainment and tier unknown', () => {
    const result = run(aPlan(), [aDeal(ann.email, '2026-04-01', 20_000)], { [`${ann.id}|2026-03`]: 10_000 })
    const statement = cell(result, ann, '2026-04')?.statement
    expect(statement).toMatchObject({ payment: 1_000, target: null, target_achievement: null, on_target_earning: null })
    expect(statement?.metrics).toMatchObject({ attainment: null, tier: null })
    expect(result.problems).toEqual([])
  })

  it('states a target without any deal: nothing achieved, nothing earned', () => {
    const result = run(aPlan(), [], { [`${ann.id}|2026-05`]: 10_000 })
    expect(cell(result, ann, '2026-05')?.statement).toMatchObject({ payment: 0, achievement: 0, target_achievement: 0, target: 10_000 })
    expect(cell(result, ann, '2026-05')?.lines).toEqual([])
  })

  it("converts a deal in another currency to the user's currency with the company's rates", () => {
    // Bob is paid in USD; 1 USD = 0.9 EUR. A 900 EUR deal is 1,000 USD: 5 % = 50 USD.
    // His 9,000 EUR target is 10,000 USD; with a 10,000 USD deal too he reaches 110 %: gold 10 %.
    const deals = [aDeal(bob.email, '2026-03-05', 900, 'EUR'), aDeal(bob.email, '2026-03-06', 10_000, 'USD')]
    const result = run(aPlan(), deals, { [`${bob.id}|2026-03`]: 9_000 })
    const outcome = cell(result, bob, '2026-03')
    expect(outcome?.statement).toMatchObject({
      currency: 'USD',
      target: 10_000,
      achievement: 11_000,
      target_achievement: 1.1,
      payment: 1_100,
    })
    expect(outcome?.lines.map((line) => [line.commission, line.currency])).toEqual([
      [100, 'USD'],
      [1_000, 'USD'],
    ])
  })

  it('reports a currency without a rate and states no figure rather than a zero', () => {
    const result = run(aPlan(), [aDeal(ann.email, '2026-03-05', 1_000, 'GBP'), aDeal(ann.email, '2026-03-06', 1_000)])
    const outcome = cell(result, ann, '2026-03')
    expect(outcome?.statement).toMatchObject({ payment: null, achievement: null })
    expect(outcome?.lines).toEqual([])
    expect(result.problems).toEqual([
      expect.objectContaining({ plan: 'Sales plan', user_id: ann.id, period: '2026-03', message: expect.stringContaining('GBP') }),
    ])
  })

  it('follows a deal reassigned to another owner: the line and the amount move to the new owner', () => {
    const deal = aDeal(ann.email, '2026-03-05', 1_000)
    const before = run(aPlan({ quota_id: null }), [deal])
    const reassigned = { ...deal, values: { ...deal.values, owner: bob.id } }
    const after = run(aPlan({ quota_id: null }), [reassigned])
    expect(cell(before, ann, '2026-03')?.statement?.payment).toBe(50)
    expect(cell(after, ann, '2026-03')).toBeUndefined()
    // 1,000 EUR is 1,111.11 USD for Bob: 5 % is 55.56 USD.
    expect(cell(after, bob, '2026-03')?.lines).toEqual([
      expect.objectContaining({ record_id: deal.id, commission: 55.56, currency: 'USD' }),
    ])
  })

  it('drops a deleted deal: its line is gone and the total goes back', () => {
    const kept = aDeal(ann.email, '2026-03-05', 1_000)
    const deleted = aDeal(ann.email, '2026-03-06', 3_000)
    expect(cell(run(aPlan({ quota_id: null }), [kept, deleted]), ann, '2026-03')?.statement?.payment).toBe(200)
    const after = cell(run(aPlan({ quota_id: null }), [kept]), ann, '2026-03')
    expect(after?.statement?.payment).toBe(50)
    expect(after?.lines.map((line) => line.record_id)).toEqual([kept.id])
  })

  it('moves a deal to the period of its new date', () => {
    const deal = aDeal(ann.email, '2026-03-31T23:30:00.000Z', 1_000)
    const moved = { ...deal, values: { ...deal.values, close_date: '2026-04-01T00:30:00.000Z' } }
    const result = run(aPlan({ quota_id: null }), [moved])
    expect(cell(result, ann, '2026-03')).toBeUndefined()
    expect(cell(result, ann, '2026-04')?.lines).toEqual([expect.objectContaining({ date: '2026-04-01', commission: 50 })])
  })

  it('pays an archived user up to their last month of activity, and nothing after', () => {
    const deals = [aDeal(gone.email, '2026-02-10', 1_000), aDeal(gone.email, '2026-03-10', 1_000)]
    const result = run(aPlan(), deals, { [`${gone.id}|2026-02`]: 10_000, [`${gone.id}|2026-03`]: 10_000 })
    expect(cell(result, gone, '2026-02')?.statement?.payment).toBe(50)
    expect(cell(result, gone, '2026-03')).toBeUndefined()
    expect(result.problems).toEqual([])
  })

  it.each([
    { filter: { field: 'deal_types', contains: 'new' }, counted: ['new;upsell'] },
    { filter: { field: 'product', in: ['Platform', 'Support'] }, counted: ['new;upsell', 'renewal'] },
    { filter: { field: 'deal_types', in: ['renewal'] }, counted: ['renewal'] },
    // No deal has a value for a field named like an Object.prototype member: none matches, not even its member's text.
    { filter: { field: 'toString', in: [String(Object.prototype.toString)] }, counted: [] },
  ])('counts only the records its filters let through: $filter', ({ filter, counted }) => {
    const deals = [
      aDeal(ann.email, '2026-03-01', 1_000, 'EUR', { product: 'Platform', deal_types: ['new', 'upsell'] }),
      aDeal(ann.email, '2026-03-02', 1_000, 'EUR', { product: 'Support', deal_types: ['renewal'] }),
      aDeal(ann.email, '2026-03-03', 1_000, 'EUR', { product: 'Training', deal_types: ['upsell'] }),
    ]
    const lines = cell(run(aPlan({ quota_id: null, filters: [filter] }), deals), ann, '2026-03')?.lines ?? []
    const typesOf = (recordId: string) => String(deals.find((deal) => deal.id === recordId)?.values.deal_types).replace(',', ';')
    expect(lines.map((line) => typesOf(line.record_id))).toEqual(counted)
  })

  it('places records in fiscal periods and dates statements on the first day of the period', () => {
    // A fiscal year starting in April: 2026-Q1 is April to June 2025, 2026-Q4 January to March 2026.
    const fiscal = { ...EUR, fiscalYearStartMonth: 4 }
    const plan = aPlan({ quota_id: null, frequency: 'quarterly' })
    const result = run(plan, [aDeal(ann.email, '2025-05-20', 1_000), aDeal(ann.email, '2026-02-01', 1_000)], {}, fiscal)
    expect(cell(result, ann, '2026-Q1')?.statement?.date).toBe('2025-04-01')
    expect(cell(result, ann, '2026-Q4')?.statement?.date).toBe('2026-01-01')
  })

  it('writes the periods of a date before the year 1000 with four digits, as the date does', () => {
    // It threw before ("999-05 is not a monthly period"): the period was written without the year's leading zero.
    const deals = [aDeal(ann.email, '0999-05-20', 1_000)]
    const expected = {
      monthly: ['0999-05', '0999-05-01'],
      quarterly: ['0999-Q2', '0999-04-01'],
      semesterly: ['0999-S1', '0999-01-01'],
      annually: ['0999', '0999-01-01'],
    } as const
    for (const [frequency, [period, date]] of Object.entries(expected)) {
      const result = run(aPlan({ quota_id: null, frequency: frequency as Plan['frequency'] }), deals)
      expect(result.problems).toEqual([])
      expect(cell(result, ann, period)?.statement).toMatchObject({ payment: 50, date })
    }
  })

  it('reports a date whose fiscal year cannot be written as a period, and calculates the rest', () => {
    // A fiscal year starting in April: November 9999 is in fiscal year 10000.
    const fiscal = { ...EUR, fiscalYearStartMonth: 4 }
    const plan = aPlan({ quota_id: null, frequency: 'annually' })
    const result = run(plan, [aDeal(ann.email, '9999-11-02', 1_000), aDeal(ann.email, '9999-02-02', 1_000)], {}, fiscal)
    expect(result.problems.map((problem) => problem.message)).toEqual(['close_date: 9999-11-02 is in no period of frequency annually'])
    expect(cell(result, ann, '9999')?.statement?.payment).toBe(50)
  })

  it('reports a date whose fiscal period would start before year 0000, and calculates the rest', () => {
    // January 0000 is in fiscal year 0000, which starts in year -1 unless it starts in January: a fiscal year of
    // April puts it in an annual and a semesterly period that start in year -1, one of March in such a quarter.
    const deals = [aDeal(ann.email, '0000-01-15', 1_000), aDeal(ann.email, '0000-04-02', 1_000)]
    for (const [frequency, fiscalYearStartMonth, period, date] of [
      ['annually', 4, '0001', '0000-04-01'],
      ['semesterly', 4, '0001-S1', '0000-04-01'],
      ['quarterly', 3, '0001-Q1', '0000-03-01'],
    ] as const) {
      const result = run(aPlan({ quota_id: null, frequency }), deals, {}, { ...EUR, fiscalYearStartMonth })
      expect(result.problems.map((problem) => problem.message)).toEqual([
        `close_date: 0000-01-15 is in no period of frequency ${frequency}`,
      ])
      expect(cell(result, ann, period)?.statement).toMatchObject({ payment: 50, date })
    }
    // Nor does a target of such a period make a cell: it could not be dated.
    const annual = aPlan({ frequency: 'annually' })
    const targets = run(annual, [], { [`${ann.id}|0000`]: 1_000, [`${ann.id}|0001`]: 1_000 }, { ...EUR, fiscalYearStartMonth: 4 })
    expect([...targets.cells.keys()]).toEqual([`${ann.id}|0001`])
  })

  it('reports a record it cannot place: no user, an unknown user, no date, no amount', () => {
    const plan = aPlan({ quota_id: null })
    const records = [
      aDeal('', '2026-03-01', 1),
      aDeal('nobody@acme.example', '2026-03-01', 1),
      aDeal(ann.email, '', 1),
      aRecord(COMPANY_ID, TABLE.id, { external_id: 'X', values: { owner: ann.email, close_date: '2026-03-01' } }),
    ]
    const outcomes = records.map((record) => placeRecord(plan, record, users, EUR))
    expect(outcomes.map((outcome) => (outcome.kind === 'problem' ? outcome.problem.message : outcome.kind))).toEqual([
      'owner: no user',
      'owner: no user nobody@acme.example',
      'close_date: no date',
      'amount: no amount',
    ])
  })

  it('uses the manual override of a field over the imported value', () => {
    const deal = aDeal(ann.email, '2026-03-05', 1_000)
    const overridden = { ...deal, overrides: { amount: { value: 2_000, currency: 'EUR' } } }
    expect(cell(run(aPlan({ quota_id: null }), [overridden]), ann, '2026-03')?.statement?.payment).toBe(100)
  })

  it('states the attainment to four decimals, halves away from zero, and a tiny negative one as 0, never -0', () => {
    // 8,008.50 of 10,000 is 0.80085: 0.8009 by hand (the binary division comes out a hair under the half).
    const half = cell(run(aPlan(), [aDeal(ann.email, '2026-03-10', 8_008.5)], { [`${ann.id}|2026-03`]: 10_000 }), ann, '2026-03')
    expect(half?.statement?.target_achievement).toBe(0.8009)
    expect(half?.statement?.metrics.attainment).toBe(0.8009)
    // A credit note of 0.01 against 10,000: −0.000001, which is 0 to four decimals. A -0 would not compare equal to
    // the 0 read back from the store, and the statement would be written again at every recalculation.
    const credit = cell(run(aPlan(), [aDeal(ann.email, '2026-03-10', -0.01)], { [`${ann.id}|2026-03`]: 10_000 }), ann, '2026-03')
    expect(Object.is(credit?.statement?.target_achievement, 0)).toBe(true)
    expect(Object.is(credit?.statement?.metrics.attainment, 0)).toBe(true)
  })

  it('reaches a tier exactly on its boundary, though the division comes out a hair under it', () => {
    // 8,002.40 of 10,003 is 80 % exactly, which binary division gives as 0.7999999999999999: silver, 6 %.
    // 6 % of 8,002.40 = 480.144 → 480.14; the base rate would pay 400.12, so the tier added 80.02.
    const outcome = cell(run(aPlan(), [aDeal(ann.email, '2026-03-10', 8_002.4)], { [`${ann.id}|2026-03`]: 10_003 }), ann, '2026-03')
    expect(outcome?.statement).toMatchObject({ payment: 480.14, target_achievement: 0.8 })
    expect(outcome?.statement?.metrics).toEqual({ attainment: 0.8, tier: 'silver', bonus: { value: 80.02, currency: 'EUR' } })
  })

  it('does not reach a tier with an achievement a fraction of a cent short of it, however large the target', () => {
    // 6.3 % of 222,154,132.54 is 13,995,710.350020...: 13,995,710.35 is 0.00002 short of it, the next cent over it. A
    // quotient's fixed slack (10⁻¹³ of the target: 0.00002 here) took the first for reaching the tier.
    const plan = aPlan({ tiers: [{ from: 0.063, rate: 0.06, name: 'silver' }] })
    const tierOf = (amount: number) =>
      cell(run(plan, [aDeal(ann.email, '2026-03-10', amount)], { [`${ann.id}|2026-03`]: 222_154_132.54 }), ann, '2026-03')?.statement
        ?.metrics.tier
    expect(tierOf(13_995_710.35)).toBeNull()
    expect(tierOf(13_995_710.36)).toBe('silver')
  })

  it('states no bonus where no tier added anything, whatever the rounding of the commission', () => {
    // No quota, no tiers: 5 % of 1,234.50 = 61.725 → 61.73, all of it the base rate's.
    const plan = aPlan({ quota_id: null, tiers: [] })
    const outcome = cell(run(plan, [aDeal(ann.email, '2026-03-10', 1_234.5)]), ann, '2026-03')
    expect(outcome?.lines.map((line) => [line.commission, line.metrics.bonus])).toEqual([[61.73, { value: 0, currency: 'EUR' }]])
    expect(outcome?.statement?.metrics.bonus).toEqual({ value: 0, currency: 'EUR' })
  })

  it('states the target to the cent in a cell whose deal cannot be converted', () => {
    // A target of 20,531.41 USD is 18,478.269 EUR at 0.9, stated 18,478.27; the GBP deal has no rate.
    const inDollars = { ...quota, currency: 'USD' }
    const inGbp = placed(aDeal(ann.email, '2026-03-05', 1_000, 'GBP'))
    const result = calculateCell(
      { plan: aPlan(), user: ann, period: '2026-03', entries: [inGbp], quota: inDollars, quotaValue: 20_531.41 },
      EUR,
    )
    expect(result.statement).toMatchObject({ payment: null, achievement: null, target: 18_478.27 })
    expect(result.problems.map((problem) => problem.message)).toEqual([expect.stringContaining('GBP')])
  })

  it('states no figure for a cell whose target cannot be converted, rather than paying it as if it had none', () => {
    // A 9,000 CHF target, and no CHF rate: with it, 100 % would pay silver. Its figures are unknown, and reported.
    const inSwissFrancs = { ...quota, currency: 'CHF' }
    const inputs = { plan: aPlan(), user: ann, period: '2026-03', quota: inSwissFrancs, quotaValue: 9_000 }
    const withDeal = calculateCell({ ...inputs, entries: [placed(aDeal(ann.email, '2026-03-05', 9_000))] }, EUR)
    expect(withDeal.statement).toMatchObject({ payment: null, target: null, achievement: null, target_achievement: null })
    expect(withDeal.statement?.metrics).toEqual({ attainment: null, tier: null, bonus: null })
    expect(withDeal.lines).toEqual([])
    expect(withDeal.problems.map((problem) => problem.message)).toEqual([expect.stringContaining('CHF')])
    // Without a deal the cell has a target all the same: a statement, its figures unknown too.
    expect(calculateCell({ ...inputs, entries: [] }, EUR).statement).toMatchObject({ payment: null, target: null })
    // And adding to it from its sums is left to the whole cell.
    const sums = { achievement: 0, payment: 0, bonus: 0 }
    expect(addToCell({ ...inputs, entries: [placed(aDeal(ann.email, '2026-03-06', 10))] }, sums, EUR)).toBeNull()
  })

  it.each([
    // 10 at a rate of 1e308 is 1e309; an amount of 1e308 is 1e310 cents; 10 of a 1e-320 target is an infinite attainment.
    { case: 'a rate', plan: { rate: 1e308, quota_id: null, tiers: [] }, amount: 10, target: null },
    { case: 'an amount', plan: { quota_id: null, tiers: [] }, amount: 1e308, target: null },
    { case: 'a target', plan: {}, amount: 10, target: 1e-320 },
  ])('states no figure, and reports it, where $case takes a figure past what a number holds', ({ plan, amount, target }) => {
    // JSON has no infinity: such a figure would be shown as null, and summed into totals as infinite.
    const inputs = { plan: aPlan(plan), user: ann, period: '2026-03', quota, quotaValue: target }
    const entries = [placed(aDeal(ann.email, '2026-03-05', amount))]
    const result = calculateCell({ ...inputs, entries }, EUR)
    expect(result.statement).toMatchObject({ payment: null, achievement: null, target_achievement: null, sums: null })
    expect(result.lines).toEqual([])
    expect(result.problems.map((problem) => problem.message)).toEqual([expect.stringContaining('too large to calculate')])
    // Adding to such a cell from its sums is left to the whole cell, which reports it.
    expect(addToCell({ ...inputs, entries }, { achievement: 0, payment: 0, bonus: 0 }, EUR)).toBeNull()
  })

  it('reports a target of the wrong quota type and pays the base rate', () => {
    const percentage = { ...quota, type: 'percentage' as const }
    const deal = aDeal(ann.email, '2026-03-05', 1_000)
    const result = calculateCell(
      { plan: aPlan(), user: ann, period: '2026-03', entries: [placed(deal)], quota: percentage, quotaValue: 0.8 },
      EUR,
    )
    expect(result.statement).toMatchObject({ payment: 50, target: null })
    expect(result.problems.map((problem) => problem.message)).toEqual([expect.stringContaining('amount quota')])
  })

  it('gives the same result whatever the order of its inputs, and a payment that is the sum of its lines', () => {
    const deals = Array.from({ length: 40 }, (_, index) =>
      aDeal(index % 2 ? ann.email : bob.email, `2026-03-${String((index % 28) + 1).padStart(2, '0')}`, 333.33 + index),
    )
    const values = { [`${ann.id}|2026-03`]: 5_000, [`${bob.id}|2026-03`]: 4_000 }
    const plan = aPlan({ tier_mode: 'marginal' })
    const forward = run(plan, deals, values)
    const backward = run(plan, deals.toReversed(), values)
    expect([...backward.cells]).toEqual([...forward.cells])
    for (const result of forward.cells.values()) {
      const sum = Math.round(result.lines.reduce((total, line) => total + line.commission * 100, 0)) / 100
      expect(result.statement?.payment).toBe(sum)
    }
  })
})

const marchDeals = (user: User, amounts: Array<[number, string?]>, from = 1) =>
  amounts.map(([amount, currency], index) =>
    placed(aDeal(user.email, `2026-03-${String(from + index).padStart(2, '0')}`, amount, currency)),
  )

const marchInputs = (plan: Plan, user: User, entries: ReturnType<typeof placed>[], target: number | null) => ({
  plan,
  user,
  period: '2026-03',
  entries,
  quota: plan.quota_id ? quota : null,
  quotaValue: target,
})

/** A cell's records before, the records added to it, and its target. */
interface Addition {
  name: string
  plan: Plan
  user: User
  before: Array<[number, string?]>
  added: Array<[number, string?]>
  target: number | null
}

/** The cell before and after the addition, calculated whole, and what `addToCell` gives from the sums before. */
function added(example: Addition) {
  const before = marchDeals(example.user, example.before)
  const entries = marchDeals(example.user, example.added, 20)
  const stated = calculateCell(marchInputs(example.plan, example.user, before, example.target), EUR).statement
  if (!stated?.sums) throw new Error('the cell before states no sums')
  const whole = calculateCell(marchInputs(example.plan, example.user, [...before, ...entries], example.target), EUR)
  const addedIds = new Set(entries.map((entry) => entry.recordId))
  return {
    whole: { statement: whole.statement, lines: whole.lines.filter((line) => addedIds.has(line.record_id)) },
    fromSums: addToCell(marchInputs(example.plan, example.user, entries, example.target), stated.sums, EUR),
  }
}

describe('adding records to a cell from its sums (addToCell)', () => {
  const answered: Addition[] = [
    {
      name: 'no quota: the base rate',
      plan: aPlan({ quota_id: null }),
      user: ann,
      before: [[1_000], [250.5]],
      added: [[99.99]],
      target: null,
    },
    { name: 'whole, staying below the first tier', plan: aPlan(), user: ann, before: [[3_000]], added: [[1_000], [500]], target: 10_000 },
    { name: 'whole, staying in gold', plan: aPlan(), user: ann, before: [[12_000]], added: [[700]], target: 10_000 },
    {
      name: 'whole, converted amounts (each rounded to the cent)',
      plan: aPlan(),
      user: bob,
      before: [[333.33], [1_000.01]],
      added: [[777.77], [12.34, 'USD']],
      target: 9_000,
    },
    {
      name: 'marginal tiers without a target: the base rate',
      plan: aPlan({ tier_mode: 'marginal' }),
      user: ann,
      before: [[3_000]],
      added: [[100]],
      target: null,
    },
  ]
  for (const example of answered) {
    it(`gives what the whole cell gives: ${example.name}`, () => {
      const { whole, fromSums } = added(example)
      expect(fromSums?.statement).toEqual(whole.statement)
      expect(fromSums?.lines).toEqual(whole.lines)
    })
  }

  const leftToTheWholeCell: Addition[] = [
    {
      name: 'whole, crossing into silver re-prices every record',
      plan: aPlan(),
      user: ann,
      before: [[7_000]],
      added: [[1_500]],
      target: 10_000,
    },
    {
      name: 'marginal tiers with a target',
      plan: aPlan({ tier_mode: 'marginal' }),
      user: ann,
      before: [[3_000]],
      added: [[100]],
      target: 10_000,
    },
    {
      name: 'an added amount that cannot be converted',
      plan: aPlan(),
      user: ann,
      before: [[3_000]],
      added: [[100, 'GBP']],
      target: 10_000,
    },
  ]
  for (const example of leftToTheWholeCell) {
    it(`leaves it to the whole cell: ${example.name}`, () => {
      expect(added(example).fromSums).toBeNull()
    })
  }

  it('counts a converted amount to the cent: the achievement is the sum of the rounded amounts', () => {
    // Bob is paid in USD at 1 USD = 0.9 EUR: 100 EUR is 111.111… USD, counted 111.11; three of them 333.33, each
    // earning 5 % of 111.11 = 5.5555, 5.56 to the cent: 16.68 in all.
    const result = calculateCell(marchInputs(aPlan({ quota_id: null }), bob, marchDeals(bob, [[100], [100], [100]]), null), EUR)
    expect(result.statement).toMatchObject({ achievement: 333.33, payment: 16.68 })
    expect(result.statement?.sums).toEqual({ achievement: 33_333, payment: 1_668, bonus: 0 })
    expect(result.lines.map((line) => [line.basis, line.commission])).toEqual([
      [111.11, 5.56],
      [111.11, 5.56],
      [111.11, 5.56],
    ])
  })
})

function placed(record: DataTableRecord) {
  const outcome = placeRecord(aPlan(), record, users, EUR)
  if (outcome.kind !== 'placed') throw new Error(`not placed: ${outcome.kind}`)
  return outcome.placement
}
