/** Checks of the value formats the interface accepts, shared by fixtures, imports and query parameters. */

export function isCurrencyCode(value: unknown): value is string {
  return typeof value === 'string' && /^[A-Z]{3}$/.test(value)
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/** A real calendar date written YYYY-MM-DD (the proleptic Gregorian calendar, as Date reads it). */
export function isDateString(value: unknown): value is string {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value)) return false
  // Checked by arithmetic, not through a Date: an import checks every date of every record (docs/performance.md).
  const year = Number(value.slice(0, 4))
  const month = Number(value.slice(5, 7))
  const day = Number(value.slice(8, 10))
  if (month < 1 || month > 12 || day < 1) return false
  const leap = month === 2 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  return day <= DAYS_IN_MONTH[month - 1] + (leap ? 1 : 0)
}

/** A month written YYYY-MM. */
export function isMonthString(value: unknown): value is string {
  return typeof value === 'string' && /^\d{4}-(0[1-9]|1[0-2])$/.test(value)
}

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)?)?$/
/** An offset of hours alone (`+02`), which ISO 8601 allows and Date does not read. */
const HOURS_OFFSET = /[+-]\d{2}$/

/**
 * Reads an ISO 8601 date or date-time as an instant: its offset written `Z`, `±hh:mm`, `±hhmm` or `±hh`, and `T`
 * and `Z` in either case (RFC 3339 allows lower case). A value without an offset is read as UTC (the documented
 * rule), a bare date as its midnight UTC. Returns null for anything else (`T24:00` included), and for an instant
 * outside years 0000 to 9999 in UTC.
 */
export function parseInstant(value: unknown): Date | null {
  if (typeof value !== 'string') return null
  const upper = value.toUpperCase()
  if (!ISO_DATE_TIME.test(upper)) return null
  const time = upper.includes('T')
  // Hours run to 23 (RFC 3339, as the fixture's schema checks): Date reads `T24:00` as the next midnight.
  if (time && upper.slice(11, 13) > '23') return null
  const hasOffset = time && /(Z|[+-]\d{2}(:?\d{2})?)$/.test(upper)
  const withOffset = HOURS_OFFSET.test(upper) && time ? `${upper}:00` : upper
  const text = time ? (hasOffset ? withOffset : `${upper}Z`) : `${upper}T00:00:00Z`
  const date = new Date(text)
  if (Number.isNaN(date.getTime())) return null
  // An offset can carry a time of year 9999 past its end, or one of year 0 before it: its UTC form could not be
  // written as ISO 8601 with four digits (`+010000-…`), which every reader and comparison of ours expects.
  const year = date.getUTCFullYear()
  if (year < 0 || year > 9999) return null
  // Reject impossible calendar dates that Date would roll over (2026-02-30).
  return isDateString(value.slice(0, 10)) ? date : null
}

/**
 * Whether an instant was written with a digit other than 0 past its millisecond (`10:00:00.1231`), which
 * `parseInstant` drops: a time kept to the millisecond, `10:00:00.123`, is before that instant, not at it.
 */
export function pastItsMillisecond(value: string): boolean {
  return /T[^.]*\.\d{3}\d*[1-9]/i.test(value)
}

/**
 * A time a row is to be stamped with, as given (an admin edit's or a fixture's `modified_at`): its ISO 8601 UTC
 * form, or why it cannot be. Rows keep their times to the millisecond: one written with a digit other than 0 past it
 * would be kept as the millisecond before, and a sync from the very instant it was given (quota values' bounds are
 * inclusive) would miss the row.
 */
export function rowTime(value: string): { at: string } | { problem: string } {
  if (pastItsMillisecond(value)) return { problem: 'a row’s time is kept to the millisecond: no digit but 0 can follow it' }
  const instant = parseInstant(value)
  return instant ? { at: instant.toISOString() } : { problem: 'expected a date-time from 0000-01-01T00:00:00Z to 9999-12-31T23:59:59Z' }
}

/**
 * Why a query parameter is not an instant, for its 400, naming two causes rather than leave the client to guess: a
 * `+` written as it is in a query string is read as a space, so an offset `+02:00` arrives as ` 02:00`; and a space
 * between the date and the time, as Python's `str()` of a datetime writes it (`urlencode` then sends it as `+`).
 */
export function instantParamProblem(value: string): string {
  const withOffset = value.replace(/ (\d{2}(:?\d{2})?)$/, '+$1')
  if (parseInstant(withOffset) !== null)
    return 'a + in a query string is read as a space: write the offset’s + as %2B (2026-01-31T10:00:00%2B02:00)'
  // Looked for in the value as sent too: a time to the minute (` 12:00`) was taken for an offset above.
  if (
    [withOffset, value].some((text) => /^\d{4}-\d{2}-\d{2} /.test(text) && parseInstant(`${text.slice(0, 10)}T${text.slice(11)}`) !== null)
  )
    return 'the date and the time are joined by T, not a space (2026-01-31T10:00:00Z; in Python, isoformat() rather than str())'
  return 'expected an ISO 8601 date-time, such as 2026-01-31T10:00:00Z (without an offset it is read as UTC)'
}

/** An email address as the interface accepts it: something@something, without spaces. */
export function isEmail(value: unknown): value is string {
  return typeof value === 'string' && /^[^@\s]+@[^@\s]+$/.test(value)
}

/**
 * A secret a client can present in a header (the admin token): printable ASCII, at least 16 characters, without
 * spaces at its ends. A header's other bytes do not arrive as they were sent (Node reads them as Latin-1, and fetch
 * refuses them), and the spaces at its ends are dropped: such a secret could never be presented.
 */
export function isPresentableSecret(value: string): boolean {
  return /^[!-~][ -~]{14,}[!-~]$/.test(value)
}

/** What every API key's secret starts with: a key is known for one wherever a client puts it (logs redact it). */
export const API_KEY_PREFIX = 'cak_'

/**
 * The form of an API key's secret, generated or given (a fixture's `secret`, DEMO_API_KEY): the prefix, then at least
 * 16 letters, digits, `_` or `-`.
 */
export const API_KEY_PATTERN = `^${API_KEY_PREFIX}[A-Za-z0-9_-]{16,}$`

const API_KEY_FORM = new RegExp(API_KEY_PATTERN)

export function isApiKeyForm(value: string): boolean {
  return API_KEY_FORM.test(value)
}
