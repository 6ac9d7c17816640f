import { centsOf, isMoney, numberOf, roundDecimal, roundToCents } from '../domain/money.ts'
import { firstDayOf, firstMonthOfPeriod, isPeriodOf, monthOfDate, monthText, periodOfMonth } from '../domain/periods.ts'
import { ownValue, recordDateOf } from '../domain/stored-values.ts'
import type { CellSums, DataTableRecord, ExchangeRates, Money, Plan, PlanFilter, PlanTier, Quota, Statement, User } from '../store/model.ts'
import { convert } from './exchange-rates.ts'
import type { CalculationProblem } from './schemas.ts'

export type { CalculationProblem } from './schemas.ts'

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

/** One record of a cell: what its commission line is calculated from. */
export interface CellEntry {
  /** The record's store id. */
  recordId: string
  /** The record's id-field value. */
  externalId: string
  /** YYYY-MM-DD: the record's date (the UTC date of a date-time). */
  date: string
  /** The record's amount, in its own currency. */
  amount: Money
}

/** A record counted by a plan, and where: the cell of its user and period. */
export interface Placement extends CellEntry {
  userId: string
  period: string
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
  return Object.keys(record.overrides).length === 0 ? record.values : { ...record.values, ...record.overrides }
}

/** One field of a record, its manual override winning over the imported value. */
function fieldValue(record: DataTableRecord, field: string): unknown {
  return Object.hasOwn(record.overrides, field) ? record.overrides[field] : ownValue(record.values, field)
}

/** Where a record counts for a plan, if it counts. */
export function placeRecord(plan: Plan, record: DataTableRecord, users: UserDirectory, company: CompanySettings): PlacementOutcome {
  for (const filter of plan.filters) if (!filterHolds(filter, fieldValue(record, filter.field))) return EXCLUDED
  const date = recordDateOf(fieldValue(record, plan.date_field))
  if (!date) return placementProblem(plan, record, `${plan.date_field}: no date`)
  const amount = fieldValue(record, plan.amount_field)
  if (!isMoney(amount)) return placementProblem(plan, record, `${plan.amount_field}: no amount`)
  const named = fieldValue(record, plan.user_field)
  const name = typeof named === 'string' ? named.trim() : ''
  if (name === '') return placementProblem(plan, record, `${plan.user_field}: no user`)
  const user = users.byId.get(name) ?? users.byEmail.get(name.toLowerCase())
  if (!user) return placementProblem(plan, record, `${plan.user_field}: no user ${named}`)

  if (user.status === 'archived' && archivedBefore(user, date.slice(0, 7))) return EXCLUDED
  // A monthly period is the date's month as it is written (YYYY-MM), which is what periodOfMonth writes.
  const period = plan.frequency === 'monthly' ? date.slice(0, 7) : periodOfDate(plan, date, company)
  // A fiscal year past 9999 cannot be written as a period; nor can the first day of one that starts before year
  // 0000, which dates its statement (checked on every record: the cheap test first).
  if (
    !isPeriodOf(plan.frequency, period) ||
    (period.startsWith('0000') && !firstMonthOfPeriod(plan.frequency, period, company.fiscalYearStartMonth))
  )
    return placementProblem(plan, record, `${plan.date_field}: ${date} is in no period of frequency ${plan.frequency}`)
  return { kind: 'placed', placement: { recordId: record.id, externalId: record.external_id, userId: user.id, period, date, amount } }
}

const EXCLUDED: PlacementOutcome = { kind: 'excluded' }

function placementProblem(plan: Plan, record: DataTableRecord, message: string): PlacementOutcome {
  return { kind: 'problem', problem: { plan: plan.name, record: record.external_id, message } }
}

function periodOfDate(plan: Plan, date: string, company: CompanySettings): string {
  const month = monthOfDate(date)
  return periodOfMonth(plan.frequency, month.year, month.month, company.fiscalYearStartMonth)
}

function filterHolds(filter: PlanFilter, value: unknown): boolean {
  if ('contains' in filter) return Array.isArray(value) && value.includes(filter.contains)
  if (Array.isArray(value)) return value.some((item) => filter.in.includes(String(item)))
  return value !== null && value !== undefined && filter.in.includes(String(value))
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
  entries: readonly CellEntry[]
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
  /** The record's amount in the user's currency, rounded to the cent: what the commission is a share of. */
  basis: number
  /** The plan's metrics on a line: the bonus, when the plan writes one. */
  metrics: Record<string, unknown>
}

/**
 * A statement as calculated: the result of one cell, dated on the first day of its period. Its `payment` is the
 * sum of the lines' commissions, null when a record of the cell could not be converted.
 */
export type CalculatedStatement = Pick<
  Statement,
  'user_id' | 'date' | 'plan' | 'currency' | 'payment' | 'target' | 'target_achievement' | 'on_target_earning' | 'achievement' | 'metrics'
> & { period: string; sums: CellSums | null }

export interface CellResult {
  /** Null when the cell holds neither a record nor a target: there is nothing to state. */
  statement: CalculatedStatement | null
  lines: CalculatedLine[]
  problems: CalculationProblem[]
}

/** What calculating a cell needs besides its records: the user's currency, converting into it, the target. */
interface CellFrame {
  currency: string
  base: Pick<CalculatedStatement, 'user_id' | 'period' | 'date' | 'plan' | 'currency'>
  problems: CalculationProblem[]
  report: (message: string, record?: string) => void
  /** A record's amount in the user's currency, to the cent; null (and reported) when it cannot be converted. */
  basisOf: (entry: CellEntry) => number | null
  target: number | null
  /** The user has a target that cannot be converted to their currency (reported): the cell's figures are unknown. */
  targetUnknown: boolean
}

function cellFrame(inputs: CellInputs, company: CompanySettings): CellFrame {
  const { plan, user, period } = inputs
  const currency = user.currency ?? company.defaultCurrency
  const problems: CalculationProblem[] = []
  const report = (message: string, record?: string) => problems.push({ plan: plan.name, record, user_id: user.id, period, message })
  const toUserCurrency = (money: Money, record?: string): number | null => {
    if (money.currency === currency) return money.value
    const converted = convert(money.value, money.currency, currency, company.exchangeRates, company.defaultCurrency)
    if ('value' in converted) return converted.value
    report(`no exchange rate for ${converted.missing}: ${money.currency} cannot be converted to ${currency}`, record)
    return null
  }
  const basisOf = (entry: CellEntry) => {
    const converted = toUserCurrency(entry.amount, entry.externalId)
    return converted === null ? null : roundToCents(converted)
  }
  const target = targetOf(inputs, toUserCurrency, report)
  const base = { user_id: user.id, period, date: periodStartDate(plan, period, company), plan: plan.name, currency }
  return { currency, base, problems, report, basisOf, target: target ?? null, targetUnknown: target === undefined }
}

/** Calculates one cell. */
export function calculateCell(inputs: CellInputs, company: CompanySettings): CellResult {
  const { plan } = inputs
  const frame = cellFrame(inputs, company)
  const { problems, target } = frame
  const entries = inputs.entries.toSorted(byDateThenId)
  if (entries.length === 0 && target === null && !frame.targetUnknown) return { statement: null, lines: [], problems }

  const amounts = entries.map(frame.basisOf)
  // A cell with an amount or a target it cannot convert is not stated with a wrong total: its figures stay unknown.
  if (frame.targetUnknown || amounts.some((amount) => amount === null)) return unknownCell(plan, frame)

  const bases = amounts as number[]
  const achieved = centsOf(bases)
  const commissions = lineCommissions(plan, bases, achieved / 100, target)
  const lines = entries.map((entry, index) => calculatedLine(plan, entry, commissions[index], bases[index], frame.currency))
  const sums = { achievement: achieved, payment: centsOf(commissions), bonus: bonusCents(plan, lines) }
  const statement = statedCell(plan, frame, sums)
  if (hasFiniteFigures(statement, lines)) return { statement, lines, problems }
  // JSON has no infinity: a figure past what a number holds would be shown as null, or stored as a wrong total.
  frame.report('a figure is too large to calculate: an amount, a rate or a target is out of range')
  return unknownCell(plan, frame)
}

/** A cell stated without figures: they cannot be calculated (reported in the frame's problems). */
function unknownCell(plan: Plan, frame: CellFrame): CellResult {
  return {
    statement: {
      ...frame.base,
      payment: null,
      // To the cent, as every stated target is; one past what a number holds is no target to state.
      target: frame.target === null || !Number.isFinite(frame.target) ? null : roundToCents(frame.target),
      target_achievement: null,
      on_target_earning: null,
      achievement: null,
      metrics: emptyMetrics(plan),
      sums: null,
    },
    lines: [],
    problems: frame.problems,
  }
}

function hasFiniteFigures(statement: CalculatedStatement, lines: readonly CalculatedLine[]): boolean {
  const { payment, target, target_achievement, on_target_earning, achievement } = statement
  const figures = [payment, target, target_achievement, on_target_earning, achievement, ...Object.values(statement.sums ?? {})]
  for (const line of lines) figures.push(line.commission, line.basis, ...Object.values(line.metrics).map(numberOf))
  return figures.every((figure) => figure === null || Number.isFinite(figure))
}

/**
 * The result of a cell to which records were only added (`entries`, none of them in the cell before), from the
 * sums its statement was calculated with: what `calculateCell` gives from all the cell's records, without reading
 * the others. That holds while their commissions stay as they were, so null (calculate the whole cell) when they
 * might not: `marginal` tiers with a target (a record dated before others changes what they earn), the added
 * amounts crossing into a tier of another rate, or an amount that cannot be converted.
 */
export function addToCell(inputs: CellInputs, sums: CellSums, company: CompanySettings): CellResult | null {
  const { plan } = inputs
  const frame = cellFrame(inputs, company)
  const { target } = frame
  if (frame.targetUnknown || (target !== null && plan.tier_mode !== 'whole')) return null
  const amounts = inputs.entries.map(frame.basisOf)
  if (amounts.some((amount) => amount === null)) return null

  const bases = amounts as number[]
  const achieved = sums.achievement + centsOf(bases)
  const rate = wholeRate(plan, achieved / 100, target)
  if (rate !== wholeRate(plan, sums.achievement / 100, target)) return null
  const commissions = bases.map((basis) => roundToCents(basis * rate))
  const lines = inputs.entries.map((entry, index) => calculatedLine(plan, entry, commissions[index], bases[index], frame.currency))
  const added = { achievement: achieved, payment: sums.payment + centsOf(commissions), bonus: sums.bonus + bonusCents(plan, lines) }
  const statement = statedCell(plan, frame, added)
  return hasFiniteFigures(statement, lines) ? { statement, lines, problems: frame.problems } : null
}

function calculatedLine(plan: Plan, entry: CellEntry, commission: number, basis: number, currency: string): CalculatedLine {
  const bonusKey = plan.metrics.bonus
  return {
    record_id: entry.recordId,
    external_id: entry.externalId,
    date: entry.date,
    commission,
    currency,
    basis,
    // What the tiers added: the commission less what the base rate pays, both to the cent (no rounding residue).
    metrics: bonusKey ? { [bonusKey]: { value: roundToCents(commission - roundToCents(basis * plan.rate)), currency } } : {},
  }
}

function bonusCents(plan: Plan, lines: readonly CalculatedLine[]): number {
  const bonusKey = plan.metrics.bonus
  return bonusKey ? centsOf(lines.map((line) => (line.metrics[bonusKey] as Money).value)) : 0
}

/** The statement of a cell whose records were all converted, from its sums. */
function statedCell(plan: Plan, frame: CellFrame, sums: CellSums): CalculatedStatement {
  const { target, currency } = frame
  const achieved = sums.achievement / 100
  const attainment = target === null ? null : achieved / target
  const metrics: Record<string, unknown> = {}
  if (plan.metrics.attainment) metrics[plan.metrics.attainment] = attainment === null ? null : roundRatio(attainment)
  if (plan.metrics.tier) metrics[plan.metrics.tier] = target === null ? null : (tierAt(plan.tiers, achieved, target)?.name ?? null)
  if (plan.metrics.bonus) metrics[plan.metrics.bonus] = { value: sums.bonus / 100, currency }
  return {
    ...frame.base,
    payment: sums.payment / 100,
    target: target === null ? null : roundToCents(target),
    target_achievement: attainment === null ? null : roundRatio(attainment),
    on_target_earning: target === null ? null : roundToCents(commissionFor(plan, target, target)),
    achievement: achieved,
    metrics,
    sums,
  }
}

/** The rate of every record of a period without a target, or with `whole` tiers: the base rate, or the tier's. */
function wholeRate(plan: Plan, achieved: number, target: number | null): number {
  return target === null ? plan.rate : (tierAt(plan.tiers, achieved, target)?.rate ?? plan.rate)
}

/**
 * Each line's commission, rounded to the cent. Without a target, or with `whole` tiers, every record earns the
 * same rate: the base rate, or the rate of the tier the period's attainment reaches. With `marginal` tiers the
 * records are counted in date order, and each earns what its amount adds to the commission of the running
 * total: `C(running total after it) − C(running total before it)`, both rounded, so that the lines add up to
 * `C(A)` to the cent and a record dated after the others never changes what they earned.
 */
function lineCommissions(plan: Plan, bases: readonly number[], achieved: number, target: number | null): number[] {
  if (target === null || plan.tier_mode === 'whole') {
    const rate = wholeRate(plan, achieved, target)
    return bases.map((basis) => roundToCents(basis * rate))
  }
  // The bases are whole cents: counted as such, the running total carries no binary noise.
  let runningCents = 0
  let earnedBefore = 0
  return bases.map((basis) => {
    runningCents += Math.round(basis * 100)
    const earned = roundToCents(commissionFor(plan, runningCents / 100, target))
    const commission = roundToCents(earned - earnedBefore)
    earnedBefore = earned
    return commission
  })
}

/**
 * The user's target for the period in the user's currency; null when there is none (no quota, no value, or one that
 * cannot serve: paid at the base rate), undefined when there is one that cannot be converted (reported).
 */
function targetOf(
  inputs: CellInputs,
  toUserCurrency: (money: Money) => number | null,
  report: (message: string) => void,
): number | null | undefined {
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
  return toUserCurrency({ value: quotaValue, currency: quota.currency }) ?? undefined
}

/** YYYY-MM-DD: the first day of a period of the plan's frequency (statements are dated so). */
function periodStartDate(plan: Plan, period: string, company: CompanySettings): string {
  const first = firstMonthOfPeriod(plan.frequency, period, company.fiscalYearStartMonth)
  if (!first) throw new RangeError(`${period} is not a ${plan.frequency} period`)
  return firstDayOf(first)
}

/**
 * The commission of an amount achieved against a target, before rounding. `whole`: the amount at the rate of the
 * tier reached. `marginal`: each band's rate on the part of the amount inside the band; the band under the first
 * tier, at the base rate, also holds what lies below zero (credit notes).
 */
export function commissionFor(plan: Plan, achieved: number, target: number): number {
  if (plan.tier_mode === 'whole') return achieved * (tierAt(plan.tiers, achieved, target)?.rate ?? plan.rate)
  const bands = [{ from: Number.NEGATIVE_INFINITY, rate: plan.rate }, ...plan.tiers]
  let commission = 0
  for (let index = 0; index < bands.length; index++) {
    const low = index === 0 ? Number.NEGATIVE_INFINITY : bands[index].from * target
    const high = index + 1 < bands.length ? bands[index + 1].from * target : Number.POSITIVE_INFINITY
    if (achieved <= low) break
    // The base band counts from zero up, or down below zero; a tier from its threshold up.
    commission += (Math.min(achieved, high) - (index === 0 ? 0 : low)) * bands[index].rate
  }
  return commission
}

/**
 * How far under a tier's threshold (`from × T`) an achievement still reaches it, as a share of the threshold: a few
 * units in the last place. Both sides are binary numbers standing for decimals (8,002.40 against 0.8 × 10,003, which
 * comes out 8,002.400000000001), each a hair off, a converted target by a few more; a cent short of a threshold under
 * 5 × 10¹² stays under it with those errors added (2⁴³, about 8.8 × 10¹², for a target as given); a fraction may not.
 */
const THRESHOLD_SLACK = 4 * Number.EPSILON

/**
 * The highest tier whose threshold the achievement reaches (`A ≥ from × T`); null below the first (the base rate
 * applies). Compared on amounts, not on `A ÷ T` with a fixed slack, which let an achievement a fraction of a cent
 * short of a large target's threshold reach it.
 */
function tierAt(tiers: readonly PlanTier[], achieved: number, target: number): PlanTier | null {
  let reached: PlanTier | null = null
  for (const tier of tiers) {
    const threshold = tier.from * target
    if (achieved >= threshold - Math.abs(threshold) * THRESHOLD_SLACK) reached = tier
  }
  return reached
}

function emptyMetrics(plan: Plan): Record<string, unknown> {
  const metrics: Record<string, unknown> = {}
  for (const key of [plan.metrics.attainment, plan.metrics.tier, plan.metrics.bonus]) if (key) metrics[key] = null
  return metrics
}

function byDateThenId(a: CellEntry, b: CellEntry): number {
  if (a.date !== b.date) return a.date < b.date ? -1 : 1
  return a.externalId < b.externalId ? -1 : a.externalId > b.externalId ? 1 : 0
}

/** Attainment kept to four decimals (0.8537 = 85.37 %), halves away from zero: more is noise of the division. */
const roundRatio = (value: number): number => roundDecimal(value, 4)

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
    const result = calculateCell({ plan, user, period, entries: placements, quota, quotaValue: quotaValues.get(key) ?? null }, company)
    problems.push(...result.problems)
    if (result.statement) cells.set(key, result)
  }
  return { cells, problems }
}
