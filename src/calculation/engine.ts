import { roundToCents, sumCents } from '../domain/money.ts'
import { firstMonthOfPeriod, monthOfDate, monthText, periodOfMonth } from '../domain/periods.ts'
import type { DataTableRecord, ExchangeRates, Money, Plan, PlanFilter, PlanTier, Quota, User } from '../store/model.ts'
import { convert } from './exchange-rates.ts'

/**
 * The calculation engine: plans turn data-table records into commission lines and statements. Pure and
 * deterministic: no store, no clock, no HTTP; the same inputs always give the same results. The formulas are
 * in `docs/calculation.md`; `src/calculation/recalculation.ts` decides which cells to run and writes the results.
 *
 * The unit of work is a **cell**: one plan, one user, one period of the plan's frequency. A cell's result is one
 * statement and one commission line per record placed in it; nothing outside the cell changes it.
 */

/** What a plan needs to know of its company. */
export interface CompanySettings {
  defaultCurrency: string
  fiscalYearStartMonth: number
  exchangeRates: ExchangeRates
}

/** Something that kept a record or a cell from being calculated. Reported, never turned into a zero. */
export interface CalculationProblem {
  plan: string
  /** The id-field value of the record concerned, if one is. */
  record?: string
  user_id?: string
  period?: string
  message: string
}

/** The users a plan's records can name: by id, and by lower-case email. */
export interface UserDirectory {
  byId: ReadonlyMap<string, User>
  byEmail: ReadonlyMap<string, User>
}

export function userDirectory(users: Iterable<User>): UserDirectory {
  const byId = new Map<string, User>()
  const byEmail = new Map<string, User>()
  for (const user of users) {
    byId.set(user.id, user)
    byEmail.set(user.email.toLowerCase(), user)
  }
  return { byId, byEmail }
}

/** A record counted by a plan, and where: the cell of its user and period. */
export interface Placement {
  record: DataTableRecord
  userId: string
  period: string
  /** YYYY-MM-DD: the record's date (the UTC date of a date-time). */
  date: string
  amount: Money
}

export type PlacementOutcome =
  | { kind: 'placed'; placement: Placement }
  /** The plan does not count the record: a filter excludes it, or its user was archived before its date. */
  | { kind: 'excluded' }
  /** The plan would count the record but cannot: no date, amount or known user. */
  | { kind: 'problem'; problem: CalculationProblem }

/**
 * What a record's fields hold, the manual overrides winning over the imported values. Without overrides it is
 * the record's own `values` object, not a copy: the engine reads it and never changes it.
 */
export function effectiveValues(record: DataTableRecord): Record<string, unknown> {
  for (const _key in record.overrides) return { ...record.values, ...record.overrides }
  return record.values
}

/** One field of a record, its manual override winning over the imported value. */
function fieldValue(record: DataTableRecord, field: string): unknown {
  return Object.hasOwn(record.overrides, field) ? record.overrides[field] : record.values[field]
}

/** Where a record counts for a plan, if it counts. */
export function placeRecord(plan: Plan, record: DataTableRecord, users: UserDirectory, company: CompanySettings): PlacementOutcome {
  for (const filter of plan.filters) if (!filterHolds(filter, fieldValue(record, filter.field))) return { kind: 'excluded' }
  const problem = (message: string): PlacementOutcome => ({ kind: 'problem', problem: { plan: plan.name, record: record.external_id, message } })

  const date = dateOf(fieldValue(record, plan.date_field))
  if (!date) return problem(`${plan.date_field}: no date`)
  const amount = fieldValue(record, plan.amount_field)
  if (!isMoney(amount)) return problem(`${plan.amount_field}: no amount`)
  const named = fieldValue(record, plan.user_field)
  if (typeof named !== 'string' || named.trim() === '') return problem(`${plan.user_field}: no user`)
  const user = users.byId.get(named.trim()) ?? users.byEmail.get(named.trim().toLowerCase())
  if (!user) return problem(`${plan.user_field}: no user ${named}`)

  const month = monthOfDate(date)
  if (user.status === 'archived' && archivedBefore(user, monthText(month))) return { kind: 'excluded' }
  const period = periodOfMonth(plan.frequency, month.year, month.month, company.fiscalYearStartMonth)
  return { kind: 'placed', placement: { record, userId: user.id, period, date, amount } }
}

function filterHolds(filter: PlanFilter, value: unknown): boolean {
  if ('contains' in filter) return Array.isArray(value) && value.includes(filter.contains)
  if (Array.isArray(value)) return value.some((item) => filter.in.includes(String(item)))
  return value !== null && value !== undefined && filter.in.includes(String(value))
}

function dateOf(value: unknown): string | null {
  return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value) ? value.slice(0, 10) : null
}

function isMoney(value: unknown): value is Money {
  return typeof value === 'object' && value !== null && typeof (value as Money).value === 'number' && typeof (value as Money).currency === 'string'
}

/** An archived user earns nothing after their last month of activity (`archived_until`; all of it when unknown). */
function archivedBefore(user: User, month: string): boolean {
  return user.status === 'archived' && (user.archived_until === null || month > user.archived_until)
}

/** Whether the user still works in the first month of the period: a target after their archive states nothing. */
export function isActiveIn(plan: Plan, user: User, period: string, company: CompanySettings): boolean {
  const first = firstMonthOfPeriod(plan.frequency, period, company.fiscalYearStartMonth)
  return first !== null && !archivedBefore(user, monthText(first))
}

/** Everything one cell is calculated from. */
export interface CellInputs {
  plan: Plan
  user: User
  period: string
  /** The records placed in the cell (`placeRecord`), in any order. */
  placements: readonly Placement[]
  /** The plan's quota, when it has one. */
  quota: Quota | null
  /** The user's value of the quota for the period, in the quota's currency; null when there is none. */
  quotaValue: number | null
}

/** A commission line as calculated: one record's commission in one cell. */
export interface CalculatedLine {
  record_id: string
  /** The record's id-field value. */
  external_id: string
  /** YYYY-MM-DD: the record's date. */
  date: string
  /** In the user's currency, rounded to the cent. */
  commission: number
  currency: string
  /** The record's values the line was calculated from (overrides applied). */
  record_values: Record<string, unknown>
  /** The plan's metrics on a line: the bonus, when the plan writes one. */
  metrics: Record<string, unknown>
}

/** A statement as calculated: the result of one cell. */
export interface CalculatedStatement {
  user_id: string
  period: string
  /** YYYY-MM-DD: the first day of the period. */
  date: string
  plan: string
  currency: string
  /** The sum of the lines' commissions; null when a record of the cell could not be converted. */
  payment: number | null
  target: number | null
  target_achievement: number | null
  on_target_earning: number | null
  achievement: number | null
  metrics: Record<string, unknown>
}

export interface CellResult {
  /** Null when the cell holds neither a record nor a target: there is nothing to state. */
  statement: CalculatedStatement | null
  lines: CalculatedLine[]
  problems: CalculationProblem[]
}

/** Calculates one cell. */
export function calculateCell(inputs: CellInputs, company: CompanySettings): CellResult {
  const { plan, user, period } = inputs
  const currency = user.currency ?? company.defaultCurrency
  const problems: CalculationProblem[] = []
  const report = (message: string, record?: string) => problems.push({ plan: plan.name, record, user_id: user.id, period, message })
  const toUserCurrency = (money: Money, record?: string): number | null => {
    const converted = convert(money.value, money.currency, currency, company.exchangeRates, company.defaultCurrency)
    if ('value' in converted) return converted.value
    report(`no exchange rate for ${converted.missing}: ${money.currency} cannot be converted to ${currency}`, record)
    return null
  }

  const placements = inputs.placements.toSorted(byDateThenId)
  const target = targetOf(inputs, currency, toUserCurrency, report)
  if (placements.length === 0 && target === null) return { statement: null, lines: [], problems }

  const amounts = placements.map((placement) => toUserCurrency(placement.amount, placement.record.external_id))
  const base = { user_id: user.id, period, date: periodStartDate(plan, period, company), plan: plan.name, currency }
  if (amounts.some((amount) => amount === null)) {
    // A cell with an amount it cannot convert is not stated with a wrong total: its figures stay unknown.
    return {
      statement: { ...base, payment: null, target, target_achievement: null, on_target_earning: null, achievement: null, metrics: emptyMetrics(plan) },
      lines: [],
      problems,
    }
  }

  const achieved = sumExact(amounts as number[])
  const attainment = target === null ? null : achieved / target
  const rate = effectiveRate(plan, achieved, target)
  const lines = placements.map((placement, index): CalculatedLine => {
    const amount = amounts[index] as number
    const commission = roundToCents(amount * rate)
    return {
      record_id: placement.record.id,
      external_id: placement.record.external_id,
      date: placement.date,
      commission,
      currency,
      record_values: effectiveValues(placement.record),
      metrics: plan.metrics.bonus ? { [plan.metrics.bonus]: { value: roundToCents(commission - amount * plan.rate), currency } } : {},
    }
  })

  const metrics: Record<string, unknown> = {}
  if (plan.metrics.attainment) metrics[plan.metrics.attainment] = attainment === null ? null : roundRatio(attainment)
  if (plan.metrics.tier) metrics[plan.metrics.tier] = attainment === null ? null : (tierAt(plan.tiers, attainment)?.name ?? null)
  if (plan.metrics.bonus) {
    const bonuses = lines.map((line) => (line.metrics[plan.metrics.bonus as string] as Money).value)
    metrics[plan.metrics.bonus] = { value: sumCents(bonuses), currency }
  }
  return {
    statement: {
      ...base,
      payment: sumCents(lines.map((line) => line.commission)),
      target: target === null ? null : roundToCents(target),
      target_achievement: attainment === null ? null : roundRatio(attainment),
      on_target_earning: target === null ? null : roundToCents(commissionFor(plan, target, target)),
      achievement: roundToCents(achieved),
      metrics,
    },
    lines,
    problems,
  }
}

/** The user's target for the period in the user's currency, or null (no quota, no value, or one that cannot serve). */
function targetOf(
  inputs: CellInputs,
  currency: string,
  toUserCurrency: (money: Money) => number | null,
  report: (message: string) => void,
): number | null {
  const { quota, quotaValue } = inputs
  if (!quota || quotaValue === null) return null
  if (quota.type !== 'amount') {
    report(`quota ${quota.name} is of type ${quota.type}: a plan's target must be an amount quota`)
    return null
  }
  if (quotaValue <= 0) {
    report(`quota ${quota.name}: a target of ${quotaValue} gives no attainment`)
    return null
  }
  return toUserCurrency({ value: quotaValue, currency: quota.currency })
}

/** YYYY-MM-DD: the first day of a period of the plan's frequency (statements are dated so). */
function periodStartDate(plan: Plan, period: string, company: CompanySettings): string {
  const first = firstMonthOfPeriod(plan.frequency, period, company.fiscalYearStartMonth)
  if (!first) throw new RangeError(`${period} is not a ${plan.frequency} period`)
  return `${monthText(first)}-01`
}

/**
 * The rate every record of the cell earns: the base rate without a target; with one, the rate of the tier the
 * attainment reaches (`whole`), or the commission of the bands the amount spans divided by the amount
 * (`marginal`), so that each record earns its share of the cell's commission.
 */
export function effectiveRate(plan: Plan, achieved: number, target: number | null): number {
  if (target === null) return plan.rate
  if (plan.tier_mode === 'whole' || achieved <= 0) return tierAt(plan.tiers, achieved / target)?.rate ?? plan.rate
  return commissionFor(plan, achieved, target) / achieved
}

/** The commission of an amount achieved against a target, before rounding. */
export function commissionFor(plan: Plan, achieved: number, target: number): number {
  if (plan.tier_mode === 'whole' || achieved <= 0) return achieved * (tierAt(plan.tiers, achieved / target)?.rate ?? plan.rate)
  let commission = 0
  const bands = [{ from: 0, rate: plan.rate }, ...plan.tiers]
  for (let index = 0; index < bands.length; index++) {
    const low = bands[index].from * target
    const high = index + 1 < bands.length ? bands[index + 1].from * target : Number.POSITIVE_INFINITY
    if (achieved > low) commission += (Math.min(achieved, high) - low) * bands[index].rate
  }
  return commission
}

/** The highest tier whose `from` the attainment reaches; null below the first (the base rate applies). */
export function tierAt(tiers: readonly PlanTier[], attainment: number): PlanTier | null {
  let reached: PlanTier | null = null
  for (const tier of tiers) if (attainment >= tier.from) reached = tier
  return reached
}

function emptyMetrics(plan: Plan): Record<string, unknown> {
  const metrics: Record<string, unknown> = {}
  for (const key of [plan.metrics.attainment, plan.metrics.tier, plan.metrics.bonus]) if (key) metrics[key] = null
  return metrics
}

function byDateThenId(a: Placement, b: Placement): number {
  return a.date < b.date ? -1 : a.date > b.date ? 1 : a.record.external_id < b.record.external_id ? -1 : a.record.external_id > b.record.external_id ? 1 : 0
}

/** Sums unrounded amounts in a fixed order (the placements' order), so that the result never depends on input order. */
function sumExact(values: readonly number[]): number {
  let sum = 0
  for (const value of values) sum += value
  return sum
}

/** Attainment kept to four decimals (0.8537 = 85.37 %): more is noise of the division. */
function roundRatio(value: number): number {
  return Math.round(value * 10_000) / 10_000
}

/** The cells of a whole plan: every record placed, then every cell with records or a target calculated. */
export interface PlanInputs {
  plan: Plan
  records: Iterable<DataTableRecord>
  users: UserDirectory
  quota: Quota | null
  /** The quota's values by `${user_id}|${period}`. */
  quotaValues: ReadonlyMap<string, number>
}

export interface PlanResult {
  cells: Map<string, CellResult>
  problems: CalculationProblem[]
}

export const cellKey = (userId: string, period: string): string => `${userId}|${period}`

/** Calculates every cell of a plan from all its records (a full recalculation). */
export function calculatePlan(inputs: PlanInputs, company: CompanySettings): PlanResult {
  const { plan, users, quota, quotaValues } = inputs
  const problems: CalculationProblem[] = []
  const placed = new Map<string, Placement[]>()
  for (const record of inputs.records) {
    const outcome = placeRecord(plan, record, users, company)
    if (outcome.kind === 'problem') problems.push(outcome.problem)
    if (outcome.kind !== 'placed') continue
    const key = cellKey(outcome.placement.userId, outcome.placement.period)
    const cell = placed.get(key)
    if (cell) cell.push(outcome.placement)
    else placed.set(key, [outcome.placement])
  }
  // A user with a target and no record in a period still has a statement: nothing achieved, nothing earned.
  if (quota) {
    for (const key of quotaValues.keys()) {
      const separator = key.indexOf('|')
      const user = users.byId.get(key.slice(0, separator))
      if (!placed.has(key) && user && isActiveIn(plan, user, key.slice(separator + 1), company)) placed.set(key, [])
    }
  }
  const cells = new Map<string, CellResult>()
  for (const [key, placements] of [...placed].toSorted(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const separator = key.indexOf('|')
    const user = users.byId.get(key.slice(0, separator)) as User
    const period = key.slice(separator + 1)
    const result = calculateCell({ plan, user, period, placements, quota, quotaValue: quotaValues.get(key) ?? null }, company)
    problems.push(...result.problems)
    if (result.statement) cells.set(key, result)
  }
  return { cells, problems }
}
