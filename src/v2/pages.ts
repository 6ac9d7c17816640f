import { type Static, Type } from 'typebox'
import { LAST_WRITABLE_TIME } from '../clock.ts'
import { instantParamProblem, parseInstant } from '../domain/formats.ts'
import { storedId } from '../domain/ids.ts'
import { ObjectIdSchema } from '../domain/schemas.ts'
import { type Issue, ValidationError } from '../errors.ts'
import type { RowWindow } from '../store/port.ts'
import { QuotaValueRowSchema, RecordRowSchema, StatementRowSchema } from './schemas.ts'

/**
 * v2 pagination, shared by statements, records and quota values: the query parameters, the store window
 * they select, and the page meta with its absolute `next_url`.
 */

/**
 * Rows per page when the request names no `limit`: 1,000 for statements and records (the real service's
 * `next_url` shows `limit=1000` for a request without one), 2,000 for quota values (the specification).
 */
export const DEFAULT_ROW_PAGE_LIMIT = 1000
export const DEFAULT_QUOTA_PAGE_LIMIT = 2000
export const MAX_PAGE_LIMIT = 2000

const DATE_TIME = 'ISO 8601 date-time; send an explicit offset (Z or ±hh:mm): one without is read as UTC'

/**
 * The page query of an endpoint whose page holds `defaultLimit` rows when the request names no `limit`. Other
 * parameters are ignored, as on v1 and on the real service (a cache-buster or a tracing parameter must not fail
 * a sync); a known parameter with a bad value is a 400.
 */
function pageQuerySchema(defaultLimit: number) {
  return Type.Object({
    start_id: Type.Optional({ ...ObjectIdSchema, description: 'start after this id (the previous page’s meta.next_start_id)' }),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_LIMIT, default: defaultLimit, description: 'rows per page' })),
    last_modified_after: Type.Optional(Type.String({ description: DATE_TIME })),
    last_modified_before: Type.Optional(Type.String({ description: DATE_TIME })),
  })
}

/** Statements and records: 1,000 rows by default. */
export const RowPageQuerySchema = pageQuerySchema(DEFAULT_ROW_PAGE_LIMIT)
/** Quota values: 2,000 rows by default. */
export const QuotaPageQuerySchema = pageQuerySchema(DEFAULT_QUOTA_PAGE_LIMIT)

/** The query of a v2 page, as the route's schema has already checked it (types, `start_id` format, `limit` range). */
export type PageQuery = Static<typeof RowPageQuerySchema>

/**
 * Whether the date bounds include the instant they name. Quota values: both inclusive (the specification).
 * Statements and records: both exclusive ("modified after/before").
 */
export type BoundRule = 'inclusive' | 'exclusive'

export const PageMetaSchema = Type.Object({
  next_start_id: Type.Union([Type.String(), Type.Null()]),
  has_more: Type.Boolean(),
  next_url: Type.Union([Type.String(), Type.Null()]),
})
export type PageMeta = Static<typeof PageMetaSchema>

/** The page of each kind of row, as the routes document them. */
export const StatementPageSchema = Type.Object({ data: Type.Array(StatementRowSchema), meta: PageMetaSchema })
export const RecordPageSchema = Type.Object({ data: Type.Array(RecordRowSchema), meta: PageMetaSchema })
export const QuotaValuePageSchema = Type.Object({ data: Type.Array(QuotaValueRowSchema), meta: PageMetaSchema })

/** A checked page request: the window to read (one row more than the page, to know whether more follow). */
export interface PageRequest {
  window: RowWindow
  limit: number
  /** The query string `next_url` carries besides `start_id`: the applied limit and date filters. */
  carried: string
}

/**
 * A date bound as given: its millisecond, and its digits past the millisecond (up to nanoseconds), which rows,
 * stamped to the millisecond, never have.
 */
interface Bound {
  /** ISO 8601 UTC, to the millisecond (the digits past it dropped). */
  at: string
  /** Digits past the millisecond, as nanoseconds: 0 to 999,999. */
  beyond: number
}

function boundOf(name: string, value: string | undefined, issues: Issue[]): Bound | undefined {
  if (value === undefined) return undefined
  const instant = parseInstant(value)
  if (!instant) {
    issues.push({ resource: name, description: instantParamProblem(value) })
    return undefined
  }
  const fraction = /T[^.]*\.(\d+)/i.exec(value)?.[1] ?? ''
  return { at: instant.toISOString(), beyond: Number(fraction.slice(3, 9).padEnd(6, '0')) }
}

/** Whether bound `a` is later than `b`, or the same instant. */
const notBefore = (a: Bound, b: Bound) => a.at > b.at || (a.at === b.at && a.beyond >= b.beyond)

/**
 * The millisecond a bound selects rows by: a row (stamped to the millisecond) is after an instant with digits past
 * its millisecond when it is after that millisecond, but it is at or after it, or before it, only from the next one.
 * Null when that next one would be past the last millisecond of year 9999, which no row is stamped with.
 */
function selecting(bound: Bound, roundUp: boolean): string | null {
  if (!roundUp || bound.beyond === 0) return bound.at
  const next = Date.parse(bound.at) + 1
  return next > LAST_WRITABLE_TIME.getTime() ? null : new Date(next).toISOString()
}

/** No row is modified after the last millisecond of year 9999. */
const NO_ROW_AFTER = LAST_WRITABLE_TIME.toISOString()

/** A bound as `next_url` carries it: in UTC, with its digits past the millisecond, so that the next page selects the same rows. */
const carriedText = ({ at, beyond }: Bound) => (beyond === 0 ? at : `${at.slice(0, 23)}${String(beyond).padStart(6, '0')}Z`)

/**
 * Checks the date filters and turns the query into a store window, with `defaultLimit` rows when the query
 * names no `limit`. Bad dates, equal or inverted bounds, a `start_id` that is no id: ValidationError.
 */
export function pageRequest(query: PageQuery, rule: BoundRule, defaultLimit: number): PageRequest {
  const issues: Issue[] = []
  const afterBound = boundOf('last_modified_after', query.last_modified_after, issues)
  const beforeBound = boundOf('last_modified_before', query.last_modified_before, issues)
  const afterId = query.start_id === undefined ? undefined : storedId(query.start_id)
  if (afterId === null) issues.push({ resource: 'start_id', description: 'expected an ObjectId (24 hex digits)' })
  if (afterBound && beforeBound && notBefore(afterBound, beforeBound)) {
    issues.push({
      resource: 'last_modified_after',
      description: notBefore(beforeBound, afterBound)
        ? 'last_modified_after equals last_modified_before'
        : 'last_modified_after is later than last_modified_before',
    })
  }
  if (issues.length > 0) throw new ValidationError(issues)

  const limit = query.limit ?? defaultLimit
  const inclusive = rule === 'inclusive'
  const window: RowWindow = { limit: limit + 1 }
  if (afterId) window.afterId = afterId
  // Which millisecond each bound selects by: an inclusive start and an exclusive end begin at the next one. Past
  // year 9999, an end keeps every row and a start none.
  if (afterBound) {
    const after = selecting(afterBound, inclusive)
    window.modifiedAfter = after === null ? { at: NO_ROW_AFTER, inclusive: false } : { at: after, inclusive }
  }
  if (beforeBound) {
    const before = selecting(beforeBound, !inclusive)
    if (before !== null) window.modifiedBefore = { at: before, inclusive }
  }

  const carried = new URLSearchParams({ limit: String(limit) })
  if (afterBound) carried.set('last_modified_after', carriedText(afterBound))
  if (beforeBound) carried.set('last_modified_before', carriedText(beforeBound))
  return { window, limit, carried: carried.toString() }
}

/**
 * Cuts the rows read (up to `limit + 1`) to the page and writes its meta. `rowsUrl` is the absolute URL of
 * the endpoint; `next_url` adds the next `start_id` and the carried parameters to it.
 */
export function cutPage<Stored extends { id: string }>(
  request: PageRequest,
  rows: Stored[],
  rowsUrl: string,
): { rows: Stored[]; meta: PageMeta } {
  const hasMore = rows.length > request.limit
  const page = hasMore ? rows.slice(0, request.limit) : rows
  const nextStartId = hasMore ? page[page.length - 1].id : null
  return {
    rows: page,
    meta: {
      next_start_id: nextStartId,
      has_more: hasMore,
      next_url: nextStartId ? `${rowsUrl}?start_id=${nextStartId}&${request.carried}` : null,
    },
  }
}
