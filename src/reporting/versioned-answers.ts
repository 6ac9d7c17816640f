import type { Store } from '../store/port.ts'

/**
 * Answers computed from the store's data alone, kept while the store is at the version they were computed at
 * (`Store.dataVersion`): discovery and field schemas, which clients read again and again between two changes and
 * which take several reads and some work to compute, and small pages (`KEPT_PAGE_ROWS`: the v1 users list, v2
 * statements and records), which a poll asks for again. Any commit, by any connection or process, makes every answer
 * stale, so an answer given is always what computing it then would give. Without a version (MongoDB, or inside a
 * transaction) nothing is kept. Concurrent requests for the same key share one computation; a computation that
 * fails is not kept.
 */

/** Answers kept at most, across companies: the oldest goes first. */
export const VERSIONED_ANSWERS = 1_000

/** Pages of at most this many rows are kept once answered (v1 users, v2 statements and records); larger ones are read each time. */
export const KEPT_PAGE_ROWS = 100
/** Pages kept at most, for each route. */
export const KEPT_PAGES = 256
/**
 * The largest page kept, in bytes of its JSON: a page of 100 rows is a few tens of kilobytes, but rows may be
 * large, and 256 pages of 99 rows of 100 KB took 3 GB.
 */
export const KEPT_PAGE_BYTES = 64 * 1024

interface KeptAnswer<Answer> {
  version: string
  answer: Promise<Answer>
}

export class VersionedAnswers<Answer> {
  readonly #answers = new Map<string, KeptAnswer<Answer>>()
  readonly #capacity: number
  readonly #keeps: (answer: Answer) => boolean
  /** The version the kept answers were computed at: a new one makes every one of them stale. */
  #version: string | null = null

  /** `keeps`: whether an answer, once computed, is small enough to keep. */
  constructor(capacity = VERSIONED_ANSWERS, keeps: (answer: Answer) => boolean = () => true) {
    this.#capacity = capacity
    this.#keeps = keeps
  }

  /** The answer for `key`: the one kept at the store's current version, else `compute`'s, kept. */
  async answer(store: Pick<Store, 'dataVersion'>, key: string, compute: () => Promise<Answer>): Promise<Answer> {
    return this.answerAt(await store.dataVersion(), key, compute)
  }

  /** The same, with the store's version read already (by a caller that needs it for something else too). */
  async answerAt(version: string | null, key: string, compute: () => Promise<Answer>): Promise<Answer> {
    if (version === null) return compute()
    // Stale answers are never given again: they go at once rather than when pushed out, whatever their size.
    if (version !== this.#version) {
      this.#answers.clear()
      this.#version = version
    }
    const kept = this.#answers.get(key)
    if (kept?.version === version) return kept.answer
    // Read after the version, the answer holds at least what that version holds; if a commit came in between, the
    // version has moved on and no later request asks for this one.
    const answer = compute()
    this.#keep(key, { version, answer })
    const forget = () => {
      if (this.#answers.get(key)?.answer === answer) this.#answers.delete(key)
    }
    answer.then((value) => this.#keeps(value) || forget(), forget)
    return answer
  }

  #keep(key: string, kept: KeptAnswer<Answer>): void {
    this.#answers.delete(key)
    if (this.#answers.size >= this.#capacity) {
      // Kept in insertion order: the first is the oldest.
      const oldest = this.#answers.keys().next()
      if (!oldest.done) this.#answers.delete(oldest.value)
    }
    if (this.#capacity > 0) this.#answers.set(key, kept)
  }

  /** How many answers are kept (for tests). */
  get size(): number {
    return this.#answers.size
  }
}
