import { type Static, Type } from 'typebox'
import { AnyKey } from '../domain/schemas.ts'

/**
 * The request journal: the last requests of each company, as a test asserts what its client did (WireMock's
 * verify). A ring of `capacity` entries per company, in the memory of the process that served them; never the
 * API key. Free of HTTP: `src/routes/test-kit.ts` records each answered request.
 */

/** One request of a company, as the journal keeps it and `GET /admin/companies/{id}/requests` lists it. */
export const JournalEntrySchema = Type.Object({
  method: Type.String(),
  path: Type.String({ description: 'As sent (percent-encoded), without the query' }),
  query: Type.Record(AnyKey, Type.Union([Type.String(), Type.Array(Type.String())]), {
    description: 'As sent; a repeated parameter as an array; an API key is [Redacted]',
  }),
  status: Type.Union([Type.Integer(), Type.Null()], {
    description:
      'Null when no answer reached the client (a fault dropped the connection, or the client closed it before the answer was written)',
  }),
  duration_ms: Type.Number(),
  request_id: Type.String(),
  import_id: Type.Union([Type.String(), Type.Null()], { description: 'The import an upsert created or joined' }),
  fault_id: Type.Union([Type.String(), Type.Null()], { description: 'The fault that fired on it' }),
  at: Type.String({ description: "When it arrived, by the service's clock" }),
})
export type JournalEntry = Static<typeof JournalEntrySchema>

export interface JournalFilter {
  method?: string
  path_prefix?: string
  status?: number
  /** Only entries at or after this instant (ISO 8601, UTC). */
  since?: string
}

/** Paths, query names and query values longer than this are cut: an entry stays small whatever a client sends. */
export const MAX_RECORDED_CHARS = 2048
/** The query values kept of a request, in the order sent: a URL may repeat a parameter thousands of times. */
export const MAX_RECORDED_QUERY_VALUES = 100
/**
 * The characters of a query's names and values kept in all, in the order sent: 100 values, each cut, still held
 * most of a URL of 16 KiB (the most Node reads), where an entry is usually well under 1 KB (docs/decisions.md).
 */
export const MAX_RECORDED_QUERY_CHARS = 4096

/**
 * The first MAX_RECORDED_CHARS characters of `text`, as a string of its own: in V8 a slice (or a value parsed out of
 * a URL) holds the whole string it came from, so that an entry cut from a long URL held all of it.
 */
function cut(text: string): string {
  return JSON.parse(JSON.stringify(text.slice(0, MAX_RECORDED_CHARS))) as string
}

/**
 * The query as an entry keeps it: each name and value cut, and the names and values past MAX_RECORDED_QUERY_CHARS
 * left out. Two names alike in their first characters are one once cut: their values go together.
 */
function keptQuery(query: JournalEntry['query']): JournalEntry['query'] {
  const kept = new Map<string, string | string[]>()
  let left = MAX_RECORDED_QUERY_CHARS
  for (const [sentName, sent] of Object.entries(query)) {
    const name = cut(sentName)
    const values: string[] = []
    for (const value of Array.isArray(sent) ? sent : [sent]) {
      left -= (values.length === 0 ? name.length : 0) + Math.min(value.length, MAX_RECORDED_CHARS)
      if (left < 0) break
      values.push(cut(value))
    }
    if (values.length > 0) {
      const before = kept.get(name)
      kept.set(name, before === undefined ? (Array.isArray(sent) ? values : values[0]) : [before, values].flat())
    }
    if (left <= 0) break
  }
  return Object.fromEntries(kept)
}

/** An entry with its place in the order the requests arrived. */
interface Kept {
  entry: JournalEntry
  arrival: number
}

/**
 * A company's latest entries, at most `capacity`, in the order their requests arrived: an entry is recorded when
 * its request ends, and one held longer than the next goes in before it. Past the capacity, the earliest arrival
 * goes, so that the entries kept are always the last requests to arrive.
 */
class Ring {
  readonly #kept: Kept[] = []
  readonly #capacity: number
  /** The first arrival the ring keeps: a request that arrived before its company's journal was cleared is not kept. */
  readonly since: number

  constructor(capacity: number, since: number) {
    this.#capacity = capacity
    this.since = since
  }

  push(kept: Kept): void {
    // Requests mostly end in the order they arrived: the place is found from the end, usually at once.
    let at = this.#kept.length
    while (at > 0 && this.#kept[at - 1].arrival > kept.arrival) at--
    this.#kept.splice(at, 0, kept)
    if (this.#kept.length > this.#capacity) this.#kept.shift()
  }

  /** The latest arrival first. */
  newestFirst(): JournalEntry[] {
    return this.#kept.map((kept) => kept.entry).toReversed()
  }
}

/** How many deleted companies the journal remembers (`RequestJournal.forget`), the earliest deleted going first. */
const FORGOTTEN_KEPT = 10_000

export class RequestJournal {
  readonly #capacity: number
  readonly #byCompany = new Map<string, Ring>()
  /** Each deleted company, with the arrivals before its deletion, which are not kept. */
  readonly #forgotten = new Map<string, number>()
  #arrivals = 0
  /** The first arrival kept since every journal was cleared. */
  #since = 0

  /** `capacity`: how many entries each company keeps (0: the journal keeps nothing). */
  constructor(capacity: number) {
    this.#capacity = capacity
  }

  /** A request arrived: its place in the order of arrival, which `record` is given when it ends. */
  arrived(): number {
    return this.#arrivals++
  }

  /**
   * `arrival`: the request's place in the order requests arrived (from `arrived`), which orders the list. A request
   * that arrived before its company's journal was cleared is not kept: one a fault's delay held past the clear of the
   * test that sent it would otherwise show in the next test's journal.
   */
  record(companyId: string, entry: JournalEntry, arrival: number): void {
    if (this.#capacity === 0 || arrival < this.#since || arrival < (this.#forgotten.get(companyId) ?? 0)) return
    let ring = this.#byCompany.get(companyId)
    if (!ring) {
      ring = new Ring(this.#capacity, this.#since)
      this.#byCompany.set(companyId, ring)
    }
    if (arrival < ring.since) return
    ring.push({ entry: { ...entry, path: cut(entry.path), query: keptQuery(entry.query) }, arrival })
  }

  /** The company's entries, the latest arrival first, that pass every filter given. */
  list(companyId: string, filter: JournalFilter = {}): JournalEntry[] {
    const method = filter.method?.toUpperCase()
    return (this.#byCompany.get(companyId)?.newestFirst() ?? []).filter(
      (entry) =>
        (method === undefined || entry.method === method) &&
        (filter.path_prefix === undefined || entry.path.startsWith(filter.path_prefix)) &&
        (filter.status === undefined || entry.status === filter.status) &&
        (filter.since === undefined || entry.at >= filter.since),
    )
  }

  /** Clears the company's journal; an empty ring stays, to know which requests still under way came before. */
  clear(companyId: string): void {
    if (this.#capacity > 0) this.#byCompany.set(companyId, new Ring(this.#capacity, this.#arrivals))
  }

  /**
   * Drops a deleted company's journal. A request that arrived before the deletion and ends after it (held by a fault's
   * delay) would make the journal again, kept for good: the company's arrivals so far are remembered, and not kept.
   */
  forget(companyId: string): void {
    this.#byCompany.delete(companyId)
    this.#forgotten.delete(companyId)
    this.#forgotten.set(companyId, this.#arrivals)
    if (this.#forgotten.size > FORGOTTEN_KEPT) this.#forgotten.delete(this.#forgotten.keys().next().value as string)
  }

  clearAll(): void {
    this.#byCompany.clear()
    // Every arrival so far is left out by `#since` now, those of deleted companies included.
    this.#forgotten.clear()
    this.#since = this.#arrivals
  }
}
