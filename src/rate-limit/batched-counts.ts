import { type RateWindow, StoreBusyError } from '../store/port.ts'

/** Writes a subject's `count` requests to the shared store (`store.rateLimits.hit`) and returns its window. */
export type WriteHits = (key: string, windowMs: number, now: Date, count: number) => Promise<RateWindow>

/** A request's place in its subject's window: its count (over `max`: refused) and the milliseconds left. */
export interface Counted {
  current: number
  ttl: number
}

/** Closed windows are forgotten at most this often (clock time), so that the map holds only open ones. */
const FORGET_EVERY_MS = 60_000

/** After the store refused a count as busy, how long (clock time) this instance counts alone before writing again. */
export const ALONE_AFTER_BUSY_MS = 1000

/**
 * How many requests of a subject an instance counts before it writes them: a twentieth of the limit, at least
 * one (4 for 80). Another instance does not see them until then, which is what bounds the excess across
 * instances (docs/decisions.md).
 */
export function batchSize(max: number): number {
  return Math.max(1, Math.floor(max / 20))
}

/** What this instance knows of a subject's open window. */
interface Window {
  resetsAt: number
  /** The window's count in the store when it last answered (this instance's written requests included). */
  stored: number
  /** Requests counted here and sent to the store, whose answer has not come yet. */
  writing: number
  /** Requests counted here and not written yet. */
  unwritten: number
  /** The write in flight, if any. */
  write: Promise<unknown> | null
  /**
   * Opened while the store was busy: a window of this instance's own, not the store's (its end is not the store
   * window's). Its requests are never written, which would count them in whatever store window is open then.
   */
  alone: boolean
}

/**
 * Counts requests per subject in this process and writes them to the shared store in batches, instead of one
 * store write per request. The first request of a window in this instance is written at once (it opens the
 * window, or joins the one another instance opened, and learns the window's count); the next ones are counted
 * here, and every `batchSize(max)`-th writes the batch and is decided by the count the store answers, the
 * others by what this instance knows: the stored count at the last answer plus its own since. That count
 * never exceeds the truth, so no request is refused below the limit; what other instances counted since
 * their last write is unknown here, so across N instances a window may let through up to
 * (N − 1) × batchSize(max) requests more than `max`. With one instance, or a batch of one, the count is exact.
 *
 * When the store refuses a write as busy (StoreBusyError: its lock held by something else past the wait, or MongoDB out
 * of reach), the instance counts alone, writing nothing, for `ALONE_AFTER_BUSY_MS`: a request is neither refused nor
 * failed for it, and across N instances a window may then let through up to N × `max`.
 */
export class BatchedRateCounts {
  readonly #write: WriteHits
  readonly #windows = new Map<string, Window>()
  /** First requests of a window whose write is under way: the subject's other requests wait for it. */
  readonly #opening = new Map<string, Promise<unknown>>()
  #forgottenAt = 0
  /** Until when (clock time) this instance counts alone: the store refused a write as busy. */
  #aloneUntil = Number.NEGATIVE_INFINITY

  constructor(write: WriteHits) {
    this.#write = write
  }

  /** Counts one request of the subject `key` at `now` in a window of `windowMs` limited to `max` requests. */
  async count(key: string, windowMs: number, max: number, now: Date): Promise<Counted> {
    const at = now.getTime()
    this.#forgetClosed(at)
    for (;;) {
      const opening = this.#opening.get(key)
      if (opening) {
        await opening.catch(() => undefined)
        continue
      }
      const window = this.#windows.get(key)
      if (!window || window.resetsAt <= at || window.resetsAt > at + 2 * windowMs || (window.alone && !this.#isAlone(at))) {
        // Requests counted in a closed window and never written are dropped with it: they no longer count. So are
        // those of a window counted alone once the store may be written again: the next request joins the store's.
        // A window ending further than two windows ahead was opened before the clock stepped back: it is closed too
        // (a little over one window ahead is a window another instance opened, its clock ahead of this one's).
        this.#windows.delete(key)
        return this.#open(key, windowMs, now)
      }
      const batch = batchSize(max)
      if (window.write && window.writing + window.unwritten >= batch) {
        await window.write.catch(() => undefined)
        continue
      }
      const known = window.stored + window.writing + window.unwritten
      // Known to be full: refused without a write, for the window's count can only grow until it closes.
      if (known >= max) return { current: known + 1, ttl: window.resetsAt - at }
      window.unwritten++
      if (window.unwritten < batch || window.write || this.#isAlone(at)) return { current: known + 1, ttl: window.resetsAt - at }
      return this.#writeBatch(key, window, windowMs, now)
    }
  }

  /** What this instance knows of the subject's open window at `now`: its count, or null when it knows none. */
  known(key: string, now: Date): Counted | null {
    const window = this.#windows.get(key)
    const at = now.getTime()
    if (!window || window.resetsAt <= at) return null
    return { current: window.stored + window.writing + window.unwritten, ttl: window.resetsAt - at }
  }

  /** The window's first request here: written at once; the subject's other requests wait for its answer. */
  async #open(key: string, windowMs: number, now: Date): Promise<Counted> {
    const at = now.getTime()
    if (this.#isAlone(at)) return this.#openAlone(key, windowMs, at)
    const written = this.#write(key, windowMs, now, 1)
    this.#opening.set(key, written)
    try {
      const stored = await written
      const resetsAt = Date.parse(stored.resetsAt)
      this.#windows.set(key, { resetsAt, stored: stored.hits, writing: 0, unwritten: 0, write: null, alone: false })
      return { current: stored.hits, ttl: Math.max(0, resetsAt - at) }
    } catch (error) {
      if (!(error instanceof StoreBusyError)) throw error
      this.#aloneUntil = at + ALONE_AFTER_BUSY_MS
      return this.#openAlone(key, windowMs, at)
    } finally {
      this.#opening.delete(key)
    }
  }

  /** A window this instance opens without the store: its first request, counted here and not written. */
  #openAlone(key: string, windowMs: number, at: number): Counted {
    this.#windows.set(key, { resetsAt: at + windowMs, stored: 0, writing: 0, unwritten: 1, write: null, alone: true })
    return { current: 1, ttl: windowMs }
  }

  /**
   * Writes the requests counted here, the current one last, and decides the current one by the store's
   * answer: the window's count once they are in it.
   */
  async #writeBatch(key: string, window: Window, windowMs: number, now: Date): Promise<Counted> {
    const count = window.unwritten
    window.unwritten = 0
    window.writing = count
    const written = this.#write(key, windowMs, now, count)
    window.write = written
    try {
      const stored = await written
      window.stored = stored.hits
      window.resetsAt = Date.parse(stored.resetsAt)
      return { current: stored.hits, ttl: Math.max(0, window.resetsAt - now.getTime()) }
    } catch (error) {
      if (!(error instanceof StoreBusyError)) throw error
      // Nothing was written: the requests are counted here again, to be written once the store answers. (On MongoDB a
      // write whose answer was lost may have been applied: the batch is then counted twice, see MongoRateLimits.hit.)
      window.unwritten += count
      this.#aloneUntil = now.getTime() + ALONE_AFTER_BUSY_MS
      return { current: window.stored + window.unwritten, ttl: Math.max(0, window.resetsAt - now.getTime()) }
    } finally {
      window.writing = 0
      window.write = null
    }
  }

  /** Whether this instance counts alone at `at`; a clock stepped back does not stretch the pause. */
  #isAlone(at: number): boolean {
    return at < this.#aloneUntil && this.#aloneUntil - at <= ALONE_AFTER_BUSY_MS
  }

  #forgetClosed(at: number): void {
    if (Math.abs(at - this.#forgottenAt) < FORGET_EVERY_MS) return
    this.#forgottenAt = at
    for (const [key, window] of this.#windows) if (window.resetsAt <= at && !window.write) this.#windows.delete(key)
  }
}
