import type { QuotaFrequency, User } from '../store/model.ts'
import { isMonthString } from './formats.ts'

const PERIOD_FORMATS: Record<QuotaFrequency, (period: string) => boolean> = {
  monthly: isMonthString,
  quarterly: (period) => /^\d{4}-Q[1-4]$/.test(period),
  semesterly: (period) => /^\d{4}-S[12]$/.test(period),
  annually: (period) => /^\d{4}$/.test(period),
}

/** The period format of each frequency, as the documentation writes it. */
export const PERIOD_FORMAT_NAMES: Record<QuotaFrequency, string> = {
  monthly: 'YYYY-MM',
  quarterly: 'YYYY-Qn',
  semesterly: 'YYYY-Sn',
  annually: 'YYYY',
}

/** True when `period` is written in the format of `frequency`. */
export function isPeriodOf(frequency: QuotaFrequency, period: string): boolean {
  return PERIOD_FORMATS[frequency](period)
}

/**
 * The period of `frequency` that holds a calendar month, in a company whose fiscal year starts in
 * `fiscalStartMonth` (1-12). Fiscal year N is the one that ends in calendar year N, unless it starts in January.
 */
export function periodOfMonth(frequency: QuotaFrequency, year: number, month: number, fiscalStartMonth: number): string {
  if (frequency === 'monthly') return monthText({ year, month })
  const offset = (month - fiscalStartMonth + 12) % 12
  const fiscalYear = yearText(fiscalStartMonth === 1 || month < fiscalStartMonth ? year : year + 1)
  if (frequency === 'quarterly') return `${fiscalYear}-Q${Math.floor(offset / 3) + 1}`
  if (frequency === 'semesterly') return `${fiscalYear}-S${Math.floor(offset / 6) + 1}`
  return fiscalYear
}

/** A year as periods write it: four digits (0999), as in the dates it comes from. */
const yearText = (year: number): string => String(year).padStart(4, '0')

/** A calendar month: `month` is 1 to 12. */
export interface CalendarMonth {
  year: number
  month: number
}

/**
 * The first calendar month of a period written in the format of `frequency` (`2026-Q1` of a fiscal year that
 * starts in April is April 2025), the inverse of `periodOfMonth`. Null when `period` is not of that format, or when
 * it starts before year 0000 (fiscal year 0000 of a year that starts in April), which no date can write.
 */
export function firstMonthOfPeriod(frequency: QuotaFrequency, period: string, fiscalStartMonth: number): CalendarMonth | null {
  if (!isPeriodOf(frequency, period)) return null
  const fiscalYear = Number(period.slice(0, 4))
  if (frequency === 'monthly') return { year: fiscalYear, month: Number(period.slice(5, 7)) }
  const index = frequency === 'annually' ? 0 : Number(period.slice(6))
  const monthsIn = frequency === 'quarterly' ? (index - 1) * 3 : frequency === 'semesterly' ? (index - 1) * 6 : 0
  // Fiscal year N ends in calendar year N, so a year that does not start in January starts in N - 1.
  const startYear = fiscalStartMonth === 1 ? fiscalYear : fiscalYear - 1
  const first = addMonths({ year: startYear, month: fiscalStartMonth }, monthsIn)
  return first.year < 0 ? null : first
}

/** YYYY-MM: the last calendar month of a period of `frequency`; null when `period` is not of that format. */
export function lastMonthOfPeriod(frequency: QuotaFrequency, period: string, fiscalStartMonth: number): string | null {
  const first = firstMonthOfPeriod(frequency, period, fiscalStartMonth)
  const length = { monthly: 1, quarterly: 3, semesterly: 6, annually: 12 }[frequency]
  return first ? shiftMonth(monthText(first), length - 1) : null
}

/** The month of a YYYY-MM-DD date or of an ISO 8601 UTC date-time (its first seven characters). */
export function monthOfDate(date: string): CalendarMonth {
  return { year: Number(date.slice(0, 4)), month: Number(date.slice(5, 7)) }
}

/** A calendar month written YYYY-MM. */
export const monthText = ({ year, month }: CalendarMonth): string => `${yearText(year)}-${String(month).padStart(2, '0')}`

/**
 * YYYY-MM-DD: the first day of a calendar month. Statements are dated on the first day of their period, as the
 * documented examples are.
 */
export const firstDayOf = (month: CalendarMonth): string => `${monthText(month)}-01`

/** The calendar month `by` months after (or before, when negative) `month`. */
export function addMonths({ year, month }: CalendarMonth, by: number): CalendarMonth {
  const index = year * 12 + (month - 1) + by
  // Floored, not `%`: a month before year 0 (fiscal year 0000 of a year that starts in April) stays a month 1 to 12.
  const shiftedYear = Math.floor(index / 12)
  return { year: shiftedYear, month: index - shiftedYear * 12 + 1 }
}

/** The month `by` months after (or before, when negative) a YYYY-MM month. */
export function shiftMonth(month: string, by: number): string {
  return monthText(addMonths(monthOfDate(month), by))
}

export const previousMonth = (month: string) => shiftMonth(month, -1)
export const nextMonth = (month: string) => shiftMonth(month, 1)

/** The first and last months that YYYY-MM writes: there is no month before the one, nor after the other. */
export const FIRST_MONTH = '0000-01'
export const LAST_MONTH = '9999-12'

/** A span of months, YYYY-MM to YYYY-MM inclusive; an open start runs from the beginning, an open end forever. */
export interface MonthRange {
  start_month: string | null
  end_month: string | null
}

/** True when two month ranges share at least one month. */
export function monthRangesOverlap(a: MonthRange, b: MonthRange): boolean {
  return startsBy(b, a.end_month) && startsBy(a, b.end_month)
}

/**
 * The last month a user is active in, and paid by plans: the last month there is, or an archived user's
 * `archived_until`; null for an archived user without one (archived by a version that kept none): no month.
 */
export function lastActiveMonthOf(user: Pick<User, 'status' | 'archived_until'>): string | null {
  return user.status === 'archived' ? user.archived_until : LAST_MONTH
}

/**
 * The first month of a user's archive period, as the archive call gave it; undefined when there is none: not
 * archived, archived up to the last month there is, or archived without a last month (by a fixture, or a version
 * that kept none), whose period is not known.
 */
export function firstArchivedMonthOf(user: Pick<User, 'status' | 'archived_until'>): string | undefined {
  const until = lastActiveMonthOf(user)
  return until === null || until === LAST_MONTH ? undefined : nextMonth(until)
}

/**
 * Whether a manager archived from `archivedFrom` (null: from the beginning) manages someone, over `attribution`,
 * in a month that person is still active in (up to `activeUntil`, `lastActiveMonthOf`): what the archive rule of
 * the interface forbids, whichever of the archive and the attribution comes first.
 */
export function managesWhileArchived(attribution: MonthRange, archivedFrom: string | null, activeUntil: string | null): boolean {
  if (activeUntil === null || (archivedFrom !== null && activeUntil < archivedFrom)) return false
  return monthRangesOverlap(attribution, { start_month: archivedFrom, end_month: activeUntil })
}

/** True when `range` starts at or before `month` (null: never ends, which every range starts before). */
function startsBy(range: MonthRange, month: string | null): boolean {
  return month === null || range.start_month === null || range.start_month <= month
}

/** The months of `range` outside `taken`: none, one or two ranges. */
export function monthRangeWithout(range: MonthRange, taken: MonthRange): MonthRange[] {
  if (!monthRangesOverlap(range, taken)) return [range]
  const pieces: MonthRange[] = []
  const { start_month: takenStart, end_month: takenEnd } = taken
  // Nothing comes before the first month, nor after the last (a piece from 10000-01 would compare before 2026-01).
  if (takenStart !== null && takenStart !== FIRST_MONTH && (range.start_month === null || range.start_month < takenStart)) {
    pieces.push({ start_month: range.start_month, end_month: previousMonth(takenStart) })
  }
  if (takenEnd !== null && takenEnd !== LAST_MONTH && (range.end_month === null || range.end_month > takenEnd)) {
    pieces.push({ start_month: nextMonth(takenEnd), end_month: range.end_month })
  }
  return pieces
}
