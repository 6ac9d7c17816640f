/**
 * Read-ahead of v2 pages. A sync walks a structure through `next_url`, one page after the other: once a page is
 * answered, the next one is read while the client reads this one, and is answered from here when it is asked
 * for. A page read ahead is answered only while the store is at the version it was read at
 * (`Store.dataVersion`), so it is always what reading it then would give; any commit, by any process, drops it.
 * The pages kept are bounded in number: a walk holds one at a time.
 */

/** Pages kept at most, across companies; the oldest goes first. */
export const READ_AHEAD_PAGES = 16

interface KeptPage<Page> {
  version: string
  /** Null when the read failed: the request then reads the page itself, and gets the error, if any, itself. */
  page: Promise<Page | null>
}

export class PageReadAhead<Page> {
  readonly #pages = new Map<string, KeptPage<Page>>()
  readonly #capacity: number

  constructor(capacity = READ_AHEAD_PAGES) {
    this.#capacity = capacity
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
    if (this.#capacity === 0 || this.#pages.has(key)) return
    const version = await versionNow().catch(() => null)
    if (version === null || this.#pages.has(key)) return
    if (this.#pages.size >= this.#capacity) this.#pages.delete(this.#pages.keys().next().value as string)
    this.#pages.set(key, { version, page: read().catch(() => null) })
  }

  /** How many pages are kept (for tests). */
  get size(): number {
    return this.#pages.size
  }
}

/** Reads nothing ahead. */
export const noReadAhead = <Page>() => new PageReadAhead<Page>(0)
