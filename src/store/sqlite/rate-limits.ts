import { makePrivateFile } from '../../durable-files.ts'
import { DatabaseSync, type StatementSync } from 'node:sqlite'
import { type RateLimitRepository, type RateSubjectKey, type RateWindow, StoreBusyError, StoreUnconfirmedError } from '../port.ts'
import { asSqliteStoreError, refuseReadOnlyFiles, retriedWhileLocked } from './connection.ts'

/** Closed windows are deleted at most this often (store time), so that the table stays small. */
const PURGE_EVERY_MS = 60_000

/**
 * How long a count waits for the counter file's write lock. Another instance's count holds it for microseconds;
 * held longer, something else holds it (a process stopped inside a transaction), and the count fails with
 * StoreBusyError, which the batched counts answer by counting in this instance alone for a while.
 */
const HIT_LOCK_WAIT_MS = 250

/**
 * The counter file beside the main SQLite file. The counters live in a file of their own so that counting a
 * request never waits for the main file's write lock, which an import may hold for a long transaction.
 */
export function rateLimitFile(mainFile: string): string {
  if (mainFile === ':memory:') return mainFile
  return mainFile.endsWith('.sqlite') ? `${mainFile.slice(0, -'.sqlite'.length)}.rate-limits.sqlite` : `${mainFile}.rate-limits`
}

/**
 * Rate windows in SQLite: one row per subject, counted by a single UPSERT, which SQLite applies atomically
 * even when several processes share the file.
 */
export class SqliteRateLimits implements RateLimitRepository {
  readonly #db: DatabaseSync
  readonly #hit: StatementSync
  readonly #peek: StatementSync
  readonly #purge: StatementSync
  #purgedAt = 0
  #closed = false

  constructor(path: string) {
    if (path !== ':memory:') {
      makePrivateFile(path)
      refuseReadOnlyFiles(path)
    }
    this.#db = new DatabaseSync(path)
    // Opening waits inside SQLite: instances started together set the file up at the same time.
    this.#db.exec('PRAGMA busy_timeout = 10000')
    this.#db.exec('PRAGMA journal_mode = WAL')
    // Counters are transient: losing the last second of them in a crash is harmless, an fsync per request is not.
    this.#db.exec('PRAGMA synchronous = OFF')
    // After a checkpoint the WAL file is cut back to this size, rather than kept at its largest.
    this.#db.exec('PRAGMA journal_size_limit = 4194304')
    this.#db.exec(
      'CREATE TABLE IF NOT EXISTS rate_windows (subject TEXT PRIMARY KEY, hits INTEGER NOT NULL, resets_at INTEGER NOT NULL) WITHOUT ROWID',
    )
    // SET expressions all read the row as it was, so both columns test the same (old) resets_at. A window that ends
    // further than two windows ahead was opened before the clock stepped back: it is closed, not stretched (one
    // window ahead and a little more is an instance whose clock is ahead of this one's).
    this.#hit = this.#db.prepare(
      `INSERT INTO rate_windows (subject, hits, resets_at) VALUES (:subject, :count, :now + :window)
       ON CONFLICT (subject) DO UPDATE SET
         hits = CASE WHEN resets_at <= :now OR resets_at > :now + 2 * :window THEN :count ELSE hits + :count END,
         resets_at = CASE WHEN resets_at <= :now OR resets_at > :now + 2 * :window THEN :now + :window ELSE resets_at END
       RETURNING hits, resets_at`,
    )
    this.#peek = this.#db.prepare('SELECT hits, resets_at FROM rate_windows WHERE subject = ? AND resets_at > ?')
    this.#purge = this.#db.prepare('DELETE FROM rate_windows WHERE resets_at <= ?')
    // Counting does not: that would hold the event loop. A locked count is retried on a timer (`hit`).
    this.#db.exec('PRAGMA busy_timeout = 0')
  }

  async hit(subject: RateSubjectKey, windowMs: number, now: Date, count = 1): Promise<RateWindow> {
    const at = now.getTime()
    // A full disk is StoreFullError, a StoreBusyError, and so is another error of the disk (`asCounterError`): the
    // batched counts then count in this instance alone.
    const row = await retriedWhileLocked(
      () => {
        this.#purgeClosed(at)
        // `all`, not `get`: a write stepped to its one row only, without running it to its end, left the connection's
        // read of the WAL open past its commit, so that no checkpoint could reset the WAL (it grew about 4 KiB a hit).
        const [counted] = this.#hit.all({ subject, now: at, window: windowMs, count }) as { hits: number; resets_at: number }[]
        return counted
      },
      HIT_LOCK_WAIT_MS,
      "the rate-limit counters' write lock",
    ).catch((error: unknown) => {
      throw asCounterError(error)
    })
    return { hits: row.hits, resetsAt: new Date(row.resets_at).toISOString() }
  }

  async peek(subject: RateSubjectKey, now: Date): Promise<RateWindow | null> {
    const row = this.#peek.get(subject, now.getTime()) as { hits: number; resets_at: number } | undefined
    return row ? { hits: row.hits, resetsAt: new Date(row.resets_at).toISOString() } : null
  }

  close(): void {
    if (this.#closed) return
    this.#closed = true
    this.#db.close()
  }

  #purgeClosed(at: number): void {
    if (Math.abs(at - this.#purgedAt) < PURGE_EVERY_MS) return
    this.#purgedAt = at
    this.#purge.run(at)
  }
}

/**
 * SQLite's error as the port states it (`asSqliteStoreError`), except that a disk that failed a write (SQLITE_IOERR: a
 * quota exceeded, a file size limit) is StoreBusyError rather than StoreUnconfirmedError. A count is no write of the
 * request's, which has done nothing yet: "it may have been done, look before sending it again" would be untrue of a
 * read, and would fail every request while the counters' disk refuses them. A count the disk took all the same is then
 * counted twice, as a MongoDB hit whose answer was lost is (`MongoRateLimits.hit`).
 */
function asCounterError(error: unknown): unknown {
  const stated = asSqliteStoreError(error)
  return stated instanceof StoreUnconfirmedError ? new StoreBusyError(stated.message, { cause: error }) : stated
}
