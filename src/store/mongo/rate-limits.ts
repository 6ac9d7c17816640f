import type { Document } from 'bson'
import type { Db, IndexDescription } from 'mongodb'
import type { RateLimitRepository, RateSubjectKey, RateWindow } from '../port.ts'
import { toPortError, upsertOnce } from './connection.ts'

/** One document per subject: `{_id: subject, hits, resets_at, purge_at}`. Not company data: no transaction. */
export const RATE_WINDOWS = 'rate_windows'

/** How long after its last hit (server time) a window's document may be deleted. */
const PURGE_AFTER_MS = 60_000

/**
 * A TTL index deletes a document once the server's clock passes its `purge_at` (the TTL monitor runs about
 * once a minute, so deletion lags by up to a minute; `hit` and `peek` never rely on it). `purge_at` is set
 * from the server's `$$NOW`, not from the caller's clock: the TTL monitor reads the server's clock, and a
 * caller's clock may be a test's manual one, far from it.
 */
export const RATE_WINDOW_INDEXES: ReadonlyMap<string, readonly IndexDescription[]> = new Map<string, readonly IndexDescription[]>([
  [RATE_WINDOWS, [{ key: { purge_at: 1 }, name: 'purge_at_ttl', expireAfterSeconds: 0 }]],
])

/**
 * The update of one hit, as an aggregation pipeline so that it can read the stored window: every `$set`
 * expression of one stage sees the document as it was, so `hits` and `resets_at` test the same old
 * `resets_at`. A window still open at `now` counts `count` more hits; a closed or missing one (an upsert: the field
 * is missing, and missing compares below any date) restarts at `count` for `windowMs`.
 */
export function hitPipeline(windowMs: number, now: Date, count = 1): Document[] {
  // A window ending further than two windows ahead was opened before the clock stepped back: closed, not stretched
  // (a little over one window ahead is another instance whose clock is ahead).
  const open = { $and: [{ $gt: ['$resets_at', now] }, { $lte: ['$resets_at', new Date(now.getTime() + 2 * windowMs)] }] }
  return [
    {
      $set: {
        hits: { $cond: [open, { $add: ['$hits', count] }, count] },
        resets_at: { $cond: [open, '$resets_at', new Date(now.getTime() + windowMs)] },
        purge_at: { $add: ['$$NOW', Math.max(windowMs, 0) + PURGE_AFTER_MS] },
      },
    },
  ]
}

function toWindow(document: Document): RateWindow {
  return { hits: document.hits as number, resetsAt: (document.resets_at as Date).toISOString() }
}

/**
 * Rate windows shared by every instance: one `findOneAndUpdate` per hit, atomic on the subject's document,
 * so n concurrent hits on an open window return k+1 to k+n, each once.
 */
export class MongoRateLimits implements RateLimitRepository {
  readonly #db: Db
  readonly #isClosed: () => boolean

  constructor(db: Db, isClosed: () => boolean) {
    this.#db = db
    this.#isClosed = isClosed
  }

  /**
   * A hit MongoDB could not serve is StoreBusyError, as a read's (`toPortError`), on which the batched counts count in
   * this instance alone for a while and write the batch again later. It may have been applied all the same (its answer
   * lost after the driver's retry): that batch is then counted twice, a window over-counted by it (4 requests of 80),
   * which refuses a few requests early during a failover, where a 500 would fail every request.
   */
  async hit(subject: RateSubjectKey, windowMs: number, now: Date, count = 1): Promise<RateWindow> {
    this.#open()
    const windows = this.#db.collection(RATE_WINDOWS)
    let document: Document | null
    try {
      document = await upsertOnce(() =>
        windows.findOneAndUpdate({ _id: subject } as Document, hitPipeline(windowMs, now, count), {
          upsert: true,
          returnDocument: 'after',
        }),
      )
    } catch (error) {
      throw toPortError(error)
    }
    if (!document) throw new Error('the rate window upsert returned no document')
    return toWindow(document)
  }

  async peek(subject: RateSubjectKey, now: Date): Promise<RateWindow | null> {
    this.#open()
    let document: Document | null
    try {
      document = await this.#db.collection(RATE_WINDOWS).findOne({ _id: subject, resets_at: { $gt: now } } as Document)
    } catch (error) {
      throw toPortError(error)
    }
    return document ? toWindow(document) : null
  }

  #open(): void {
    if (this.#isClosed()) throw new Error('the MongoDB store is closed')
  }
}
