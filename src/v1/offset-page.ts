import { type Issue, ValidationError } from '../errors.ts'
import type { OffsetWindow } from '../store/port.ts'

/** The largest `offset` a v1 list accepts: the largest signed 64-bit integer. */
export const MAX_OFFSET = 9223372036854775807n
export const MAX_LIMIT = 2000

/** The paging parameters of a v1 list as they arrive: `offset` as decimal text, since a JSON number loses precision above 2^53. */
export interface OffsetQuery {
  offset?: string
  limit?: number
}

/** The envelope of every v1 list. */
export interface OffsetPage<Row> {
  /** Every row of the list, not only this page's. */
  count: number
  data: Row[]
  /** The absolute URL of the next page; null after the last one, and for a count-only call (`limit=0`). */
  next: string | null
}

/** Where a list's rows come from. */
export interface OffsetSource<Row> {
  count(): Promise<number>
  /** Called only with an offset below the count. */
  rows(window: OffsetWindow): Promise<Row[]>
}

/** Paging parameters once checked: `offset` stays a bigint until it is known to be below the count. */
export interface CheckedOffsetQuery {
  offset: bigint
  limit: number
}

/**
 * Checks the paging parameters: the routes' schemas check their shape, this checks the range of `offset`
 * (beyond a JSON number's precision) and keeps the services safe on their own. Call it before any lookup, so
 * that a bad parameter is a 400 whatever else is wrong.
 */
export function checkOffsetQuery(query: OffsetQuery): CheckedOffsetQuery {
  const issues: Issue[] = []
  const text = query.offset ?? '0'
  const offset = /^\d{1,30}$/.test(text) ? BigInt(text) : -1n
  if (offset < 0n || offset > MAX_OFFSET) issues.push({ resource: 'offset', description: `must be an integer from 0 to ${MAX_OFFSET}` })
  const limit = query.limit ?? MAX_LIMIT
  if (!Number.isInteger(limit) || limit < 0 || limit > MAX_LIMIT) {
    issues.push({ resource: 'limit', description: `must be an integer from 0 to ${MAX_LIMIT}` })
  }
  if (issues.length > 0) throw new ValidationError(issues)
  return { offset, limit }
}

/**
 * Reads one page of a v1 list. An offset at or past the count answers an empty page without reading rows,
 * so a huge offset never reaches the store. `nextUrl` writes the absolute URL of a page.
 */
export async function readOffsetPage<Row>(
  { offset, limit }: CheckedOffsetQuery,
  source: OffsetSource<Row>,
  nextUrl: (offset: bigint, limit: number) => string,
): Promise<OffsetPage<Row>> {
  const count = await source.count()
  if (limit === 0 || offset >= BigInt(count)) return { count, data: [], next: null }
  const data = await source.rows({ offset: Number(offset), limit })
  const following = offset + BigInt(limit)
  return { count, data, next: following < BigInt(count) ? nextUrl(following, limit) : null }
}

/** The URL of a page of the v1 list at `path` (absolute, from the service's base URL). */
export function pageUrl(base: string, path: string): (offset: bigint, limit: number) => string {
  return (offset, limit) => `${base}${path}?offset=${offset}&limit=${limit}`
}
