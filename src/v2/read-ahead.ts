/**
 * Read-ahead of v2 pages. A sync walks a structure through `next_url`, one page after the other: once a page is
 * answered, the next one is read while the client reads this one, and is answered from here when it is asked
 * for. A page read ahead is answered only while the store is at the version it was read at
 * (`Store.dataVersion`), so it is always what reading it then would give; any commit, by any process, drops it.
 * The pages kept are bounded in number (a walk holds one at a time). When they are all held, the oldest makes room
 * if it has waited longer than READ_AHEAD_PATIENCE_MS (its walk stopped, or its client reads only first pages);
 * otherwise nothing more is read ahead, so that more walks at once than places never read a page twice.
 */

/** Pages kept at most, across companies. */
export const READ_AHEAD_PAGES = 16
/** How long a page read ahead keeps its place against another: a walk asks for its next page within milliseconds. */
export const READ_AHEAD_PATIENCE_MS = 2_000
/**
 * The largest page after which the next is read ahead, in bytes: the next page of a walk is about as large, and
 * 16 pages of 2,000 large rows each would hold gigabytes. A walk of larger pages reads each when it is asked for.
 */
export const READ_AHEAD_PAGE_BYTES = 4 * 1024 * 1024

interface KeptPage<Page> {
  version: string
  keptAt: number
  /** Null when the read failed: the request then reads the page itself, and gets the error, if any, itself. */
  page: Promise<Page | null>
}

export class PageReadAhead<Page> {
  readonly #pages = new Map<string, KeptPage<Page>>()
  readonly #capacity: number
  readonly #now: () => number
  /** After a page larger than this, the next one is not read ahead (`READ_AHEAD_PAGE_BYTES`). */
  readonly maxPageBytes: number

  /** `now`: milliseconds on a monotonic clock (a test's own). */
  constructor(capacity = READ_AHEAD_PAGES, now: () => number = () => performance.now(), pageBytes = READ_AHEAD_PAGE_BYTES) {
    this.#capacity = capacity
    this.#now = now
    this.maxPageBytes = pageBytes
  }

  /** The page kept for `key` when it was read at `version` (it is given once), else null. */
  async take(key: string, version: string | null): Promise<Page | null> {
    const kept = this.#pages.get(key)
    if (!kept) return null
    this.#pages.delete(key)
    return version !== null && kept.version === version ? kept.page : null
  }

  /**
   * Reads the page of `key` and keeps it, labelled with the version `versionNow` gives before the read. Nothing is
   * read when the store has no version. Resolves once the page is kept (its read may still be under way).
   */
  async readAhead(key: string, versionNow: () => Promise<string | null>, read: () => Promise<Page>): Promise<void> {
    if (!this.#hasRoomFor(key)) return
    const version = await versionNow().catch(() => null)
    if (version === null || !this.#hasRoomFor(key)) return
    this.#pages.set(key, { version, keptAt: this.#now(), page: read().catch(() => null) })
  }

  /** Whether a page for `key` may be kept now: none is kept for it, and a place is free or its page waited too long. */
  #hasRoomFor(key: string): boolean {
    if (this.#pages.has(key) || this.#capacity === 0) return false
    if (this.#pages.size < this.#capacity) return true
    // Kept in insertion order: the first is the oldest.
    const [oldestKey, oldest] = this.#pages.entries().next().value as [string, KeptPage<Page>]
    if (this.#now() - oldest.keptAt < READ_AHEAD_PATIENCE_MS) return false
    this.#pages.delete(oldestKey)
    return true
  }

  /** How many pages are kept (for tests). */
  get size(): number {
    return this.#pages.size
  }
}
