import { type Static, type TSchema, Type } from 'typebox'
import { type Issue, ValidationError } from '../errors.ts'
import type { OffsetWindow, Store } from '../store/port.ts'

/** The largest `offset` a v1 list accepts: the largest signed 64-bit integer. */
export const MAX_OFFSET = 9223372036854775807n
export const MAX_LIMIT = 2000

/** The paging parameters of a v1 list as they arrive: `offset` as decimal text, since a JSON number loses precision above 2^53. */
export const OffsetQuerySchema = Type.Object({
  offset: Type.Optional(
    Type.String({
      pattern: '^[0-9]+$',
      description: `Rows to skip: an integer from 0 to ${MAX_OFFSET} (default 0), read as text because a JSON number loses precision above 2^53`,
    }),
  ),
  limit: Type.Optional(
    Type.Integer({ minimum: 0, maximum: MAX_LIMIT, default: MAX_LIMIT, description: 'Rows per page; 0 answers only the count' }),
  ),
})
export type OffsetQuery = Static<typeof OffsetQuerySchema>

/**
 * The envelope of every v1 list, `{count, data, next}`, around rows of the given shape. `next` is null after the
 * last page, and for a count-only call (`limit=0`).
 */
export function offsetPageSchema<Row extends TSchema>(row: Row) {
  return Type.Object({
    count: Type.Integer({ description: 'Every row of the list, not only this page' }),
    data: Type.Array(row),
    next: Type.Union([Type.String(), Type.Null()], { description: 'Absolute URL of the next page; null after the last' }),
  })
}
/** A page of a v1 list whose rows are `Row`s. */
export type OffsetPage<Row> = Omit<Static<ReturnType<typeof offsetPageSchema>>, 'data'> & { data: Row[] }

/** Where a list's rows come from: the stored items of a window, in id order, and the rows a page shows of them. */
export interface OffsetSource<Item extends { id: string }, Row> {
  count(): Promise<number>
  /** Called only with an offset below the count. */
  items(window: OffsetWindow): Promise<Item[]>
  rows(items: Item[]): Promise<Row[]>
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
  // Leading zeros do not count towards the digits: 0…01 is 1.
  const text = (query.offset ?? '0').replace(/^0+(?=\d)/, '')
  const offset = /^\d{1,30}$/.test(text) ? BigInt(text) : -1n
  if (offset < 0n || offset > MAX_OFFSET) issues.push({ resource: 'offset', description: `must be an integer from 0 to ${MAX_OFFSET}` })
  const limit = query.limit ?? MAX_LIMIT
  if (!Number.isInteger(limit) || limit < 0 || limit > MAX_LIMIT) {
    issues.push({ resource: 'limit', description: `must be an integer from 0 to ${MAX_LIMIT}` })
  }
  if (issues.length > 0) throw new ValidationError(issues)
  return { offset, limit }
}

/** What lets a page be found by a seek rather than by counting `offset` rows: see `WalkPositions`. */
export interface Walk {
  positions: WalkPositions
  /** Names the list among those of `positions` (its company, its table). */
  list: string
  store: Pick<Store, 'dataVersion'>
}

/**
 * Reads one page of a v1 list. An offset at or past the count answers an empty page without reading rows,
 * so a huge offset never reaches the store. `nextUrl` writes the absolute URL of a page. Through the `walk`, the page
 * that follows is found by the id its last row ends at, while the store's data stays at the version it was read at.
 */
export async function readOffsetPage<Item extends { id: string }, Row>(
  { offset, limit }: CheckedOffsetQuery,
  source: OffsetSource<Item, Row>,
  nextUrl: (offset: bigint, limit: number) => string,
  walk: Walk,
): Promise<OffsetPage<Row>> {
  // Read before the data it labels (Store.dataVersion).
  const version = await walk.store.dataVersion()
  const count = await source.count()
  if (limit === 0 || offset >= BigInt(count)) return { count, data: [], next: null }
  const afterId = version === null ? null : walk.positions.idBefore(walk.list, offset, version)
  const items = await source.items({ offset: Number(offset), limit, ...(afterId === null ? {} : { afterId }) })
  const following = offset + BigInt(limit)
  const next = following < BigInt(count) ? nextUrl(following, limit) : null
  if (version !== null && next !== null && items.length === limit && (await walk.store.dataVersion()) === version) {
    walk.positions.remember(walk.list, following, version, items[items.length - 1].id)
  }
  return { count, data: await source.rows(items), next }
}

/** Positions kept at most, for each route: a walk needs one at a time. */
export const WALK_POSITIONS = 1_000

/**
 * Where the v1 walks stand. A client walks a list through `next`, whose `offset` skips every row before it: read
 * by offset, a page costs a count of those rows, so the pages got slower the further they went and a walk of n
 * rows cost n² / limit. Once a page is answered, the id of its last row is kept under the offset that `next`
 * names, and the next page is read after that id, a seek. It is used only while the store is at the version the
 * id was read at (both read before and after it): any commit may have added or removed rows before it, and the
 * page is then read by its offset. Without a version (MongoDB) nothing is kept. The oldest position goes first.
 */
export class WalkPositions {
  readonly #positions = new Map<string, { version: string; id: string }>()
  readonly #capacity: number

  constructor(capacity = WALK_POSITIONS) {
    this.#capacity = capacity
  }

  /** The id of the row just before `offset` in `list`, when it was kept at `version`; else null. */
  idBefore(list: string, offset: bigint, version: string): string | null {
    const kept = this.#positions.get(`${list} ${offset}`)
    return kept?.version === version ? kept.id : null
  }

  remember(list: string, offset: bigint, version: string, id: string): void {
    const key = `${list} ${offset}`
    this.#positions.delete(key)
    if (this.#positions.size >= this.#capacity) this.#positions.delete(this.#positions.keys().next().value!)
    this.#positions.set(key, { version, id })
  }

  /** How many positions are kept (for tests). */
  get size(): number {
    return this.#positions.size
  }
}

/** The URL of a page of the v1 list at `path` (absolute, from the service's base URL). */
export function pageUrl(base: string, path: string): (offset: bigint, limit: number) => string {
  return (offset, limit) => `${base}${path}?offset=${offset}&limit=${limit}`
}
