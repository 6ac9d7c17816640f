import { randomBytes } from 'node:crypto'
import { accessSync, closeSync, constants, existsSync, openSync, rmSync, statSync } from 'node:fs'
import { linkDurably, makePrivateFile, PRIVATE_FILE_MODE } from '../../durable-files.ts'
import { DatabaseSync, type SQLInputValue, type SQLOutputValue, type StatementSync } from 'node:sqlite'
import { setTimeout as sleep } from 'node:timers/promises'
import { StoreFileMovedError, StoreFullError, StoreLockedError, StoreUnconfirmedError, StoreUpgradedError } from '../port.ts'
import { asStoreError } from '../shared/conflicts.ts'
import { SerialQueue } from '../shared/serial-queue.ts'
import { MIGRATIONS } from './migrations.ts'
import { ForeignDatabaseError } from './open-errors.ts'
import { RememberedAnswers } from './remembered-answers.ts'

/** How long a write waits for another connection's write lock before it fails, as `busy_timeout` did. */
export const WRITE_LOCK_TIMEOUT_MS = 10_000
/** The size a checkpointed WAL file is cut back to. */
export const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024
/** What a backup's copy is named by until it is whole: `<file>.partial-<pid>-<random>` (a backup killed midway leaves it). */
const PARTIAL_BACKUP = '.partial-'
/** The longest pause between two attempts to take the write lock. */
const WRITE_LOCK_MAX_PAUSE_MS = 20

/** One opened SQLite database with its prepared-statement cache. */
class Handle {
  readonly db: DatabaseSync
  readonly #prepared = new Map<string, StatementSync>()

  constructor(path: string) {
    this.db = new DatabaseSync(path)
    // Several processes (the server, the CLI, a second worker) may share the file: wait for a lock, don't fail.
    this.db.exec('PRAGMA busy_timeout = 10000')
    // Before the first write: another application's file is left as it was (WAL mode is written in its header).
    try {
      refuseForeignDatabase(this.db)
    } catch (error) {
      this.db.close()
      throw error
    }
    this.db.exec('PRAGMA journal_mode = WAL')
    // With WAL, NORMAL loses no committed transaction on a process crash; FULL also survives power loss.
    this.db.exec('PRAGMA synchronous = FULL')
    // A large transaction (a reset of 200,000 deals) grows the WAL to the size of its writes; once checkpointed,
    // it is cut back to this size rather than kept at its largest (772 MB, seen in a review).
    this.db.exec(`PRAGMA journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`)
    this.db.exec('PRAGMA foreign_keys = ON')
  }

  prepare(sql: string): StatementSync {
    let statement = this.#prepared.get(sql)
    if (!statement) {
      statement = this.db.prepare(sql)
      this.#prepared.set(sql, statement)
    }
    return statement
  }

  /** A prepared statement whose rows come back as arrays of column values: cheaper than objects for wide rows. */
  prepareArrays(sql: string): StatementSync {
    const key = `arrays:${sql}`
    let statement = this.#prepared.get(key)
    if (!statement) {
      statement = this.db.prepare(sql)
      statement.setReturnArrays(true)
      this.#prepared.set(key, statement)
    }
    return statement
  }
}

export type Params = SQLInputValue[]
export type Row = Record<string, SQLInputValue>
/** A row as its column values, in the order the query selects them. */
export type Values = SQLOutputValue[]

/** What a repository sees: run a query, or run writes atomically. */
export interface Sql {
  /** True inside a transaction: every write then commits (or rolls back) with it, not on its own. */
  readonly inTransaction: boolean
  all(sql: string, ...params: Params): Promise<Row[]>
  get(sql: string, ...params: Params): Promise<Row | undefined>
  /** Like `all`, with each row as its column values. */
  values(sql: string, ...params: Params): Promise<Values[]>
  /**
   * Runs `work` on the writer, atomically: inside a transaction it joins it as a savepoint, outside it is one.
   * A broken uniqueness rule rejects with the port's StoreConflictError. Outside a transaction, `lockWaitMs`
   * shortens the wait for another connection's write lock (never past the connection's own).
   */
  write<T>(work: (db: SqlWriter) => T, options?: { lockWaitMs?: number }): Promise<T>
  /** Runs several reads that must see the same data: one read transaction, or the open transaction. */
  snapshot<T>(read: (db: SqlReader) => T): Promise<T>
  /**
   * The same reads, whose answers are kept until the database changes (a commit of any connection: this
   * process's, the import worker's thread, another process): for small answers read often and changed
   * seldom, such as a company's configuration and the counts of its rows. Inside a transaction, plain reads.
   */
  readonly remembering: Pick<Sql, 'all' | 'get' | 'values'>
}

export interface SqlReader {
  values(sql: string, ...params: Params): Values[]
}

export interface SqlWriter {
  run(sql: string, ...params: Params): { changes: number | bigint }
  all(sql: string, ...params: Params): Row[]
  values(sql: string, ...params: Params): Values[]
}

/**
 * A SQLite database opened twice: a reader that sees only committed data, and one writer that every write
 * and transaction goes through, one at a time. An in-memory database has one connection for both.
 */
export class SqliteConnection {
  readonly #writer: Handle
  readonly #reader: Handle
  readonly #writes = new SerialQueue()
  #commits = 0
  readonly #remembered = new RememberedAnswers()
  #closed = false
  readonly #writeLockTimeoutMs: number
  readonly #path: string
  /** The device and inode of the file opened, null in memory: `#refuseMovedFile` compares its path's with them. */
  readonly #opened: FileIdentity | null

  constructor(path: string, { writeLockTimeoutMs = WRITE_LOCK_TIMEOUT_MS }: { writeLockTimeoutMs?: number } = {}) {
    this.#writeLockTimeoutMs = writeLockTimeoutMs
    this.#path = path
    if (path !== ':memory:') {
      makePrivateFile(path)
      refuseReadOnlyFiles(path)
    }
    this.#writer = new Handle(path)
    this.#opened = path === ':memory:' ? null : fileIdentity(path)
    migrate(this.#writer.db)
    // From now on the writer never sleeps inside SQLite waiting for the lock (that would stop the event loop
    // of the whole thread, HTTP included): `#begin` fails fast and tries again after a timer.
    this.#writer.db.exec('PRAGMA busy_timeout = 0')
    this.#reader = path === ':memory:' ? this.#writer : new Handle(path)
  }

  /** The Sql seen outside a transaction. */
  readonly sql: Sql = {
    inTransaction: false,
    all: (sql, ...params) => this.#committed(() => this.#reader.prepare(sql).all(...params) as Row[]),
    get: (sql, ...params) => this.#committed(() => this.#reader.prepare(sql).get(...params) as Row | undefined),
    values: (sql, ...params) => this.#committed(() => this.#reader.prepareArrays(sql).all(...params) as unknown as Values[]),
    write: (work, options) =>
      this.#writes.run(async () => {
        await this.#begin(Math.min(options?.lockWaitMs ?? this.#writeLockTimeoutMs, this.#writeLockTimeoutMs))
        return this.#atomically(work)
      }),
    snapshot: (read) => this.#committed(() => this.#readTransaction(read)),
    remembering: {
      all: (sql, ...params) =>
        this.#committed(() => this.#remember('all', sql, params, () => this.#reader.prepare(sql).all(...params) as Row[])),
      get: (sql, ...params) =>
        this.#committed(() => this.#remember('get', sql, params, () => this.#reader.prepare(sql).get(...params) as Row | undefined)),
      values: (sql, ...params) =>
        this.#committed(() =>
          this.#remember('values', sql, params, () => this.#reader.prepareArrays(sql).all(...params) as unknown as Values[]),
        ),
    },
  }

  /** Runs `work` with an Sql whose reads and writes all belong to one transaction on the writer. */
  async transaction<T>(work: (sql: Sql) => Promise<T>): Promise<T> {
    return this.#writes.run(async () => {
      const writer = this.#writer
      const inside: Sql = {
        inTransaction: true,
        all: async (sql, ...params) => writer.prepare(sql).all(...params) as Row[],
        get: async (sql, ...params) => writer.prepare(sql).get(...params) as Row | undefined,
        values: async (sql, ...params) => writer.prepareArrays(sql).all(...params) as unknown as Values[],
        snapshot: async (read) => read(this.#writerApi()),
        get remembering() {
          return inside
        },
        // A savepoint keeps each call atomic inside the transaction: a refused write leaves none of its rows.
        write: async (step) => {
          writer.db.exec('SAVEPOINT write')
          try {
            const result = step(this.#writerApi())
            writer.db.exec('RELEASE write')
            return result
          } catch (error) {
            // On some errors (a full disk) SQLite has rolled the whole transaction back itself, savepoint included:
            // then there is nothing to roll back to, and the error that did it is the one to report.
            if (writer.db.isTransaction) {
              writer.db.exec('ROLLBACK TO write')
              writer.db.exec('RELEASE write')
            }
            throw asSqliteStoreError(error)
          }
        },
      }
      await this.#begin()
      try {
        const result = await work(inside)
        writer.db.exec('COMMIT')
        this.#commits++
        return result
      } catch (error) {
        if (writer.db.isTransaction) writer.db.exec('ROLLBACK')
        throw asSqliteStoreError(error)
      }
    })
  }

  /**
   * The version of the committed data: the reader's `data_version`, which moves when another connection commits
   * (this process's writer, the import worker's thread, another process), and this connection's own commits (an
   * in-memory database reads on its writer).
   */
  dataVersion(): Promise<string> {
    return this.#committed(() => this.#version())
  }

  #version(): string {
    return `${(this.#reader.prepare('PRAGMA data_version').get() as { data_version: number }).data_version}:${this.#commits}`
  }

  /** How many write transactions this connection has committed. */
  get commits(): number {
    return this.#commits
  }

  close(): void {
    if (this.#closed) return
    this.#closed = true
    if (this.#reader !== this.#writer) this.#reader.db.close()
    this.#writer.db.close()
  }

  /**
   * Runs a read of committed data. A file has its own reader connection for that; an in-memory database has
   * one connection, which sees the open transaction's writes, so a read waits until that transaction is over.
   */
  async #committed<T>(read: () => T): Promise<T> {
    if (this.#reader === this.#writer && this.#writer.db.isTransaction) return this.#writes.run(async () => read())
    return read()
  }

  /** The answer of `read`, kept while the database's version (`dataVersion`) is the one it was read at. */
  #remember<T>(kind: string, sql: string, params: Params, read: () => T): T {
    const key = `${kind}\u0000${sql}\u0000${JSON.stringify(params)}`
    return this.#remembered.answer(key, this.#version(), read)
  }

  /**
   * Runs synchronous reads in one read transaction on the reader: they all see the same committed data, even
   * when another process commits in between. (An in-memory database reads on the writer, where `#committed`
   * has made sure no transaction is open.)
   */
  #readTransaction<T>(read: (db: SqlReader) => T): T {
    const reader = this.#reader
    reader.db.exec('BEGIN')
    try {
      return read({ values: (sql, ...params) => reader.prepareArrays(sql).all(...params) as unknown as Values[] })
    } finally {
      reader.db.exec('COMMIT')
    }
  }

  #writerApi(): SqlWriter {
    const writer = this.#writer
    return {
      run: (sql, ...params) => writer.prepare(sql).run(...params),
      all: (sql, ...params) => writer.prepare(sql).all(...params) as Row[],
      values: (sql, ...params) => writer.prepareArrays(sql).all(...params) as unknown as Values[],
    }
  }

  /**
   * Opens a write transaction on the writer. When another connection (another process, or the import worker's
   * thread) holds the write lock, it waits on a timer rather than inside SQLite, so that the thread's event
   * loop goes on; after its timeout (WRITE_LOCK_TIMEOUT_MS) it fails with StoreBusyError (SQLite's "database is locked" as its cause).
   */
  async #begin(lockWaitMs = this.#writeLockTimeoutMs): Promise<void> {
    const db = this.#writer.db
    await retriedWhileLocked(() => db.exec('BEGIN IMMEDIATE'), lockWaitMs, "the store's write lock")
    // Another process may have migrated the file since this one opened it: nothing is written by an older schema.
    try {
      refuseNewerSchema(this.#writer)
      this.#refuseMovedFile()
    } catch (error) {
      db.exec('ROLLBACK')
      throw error
    }
  }

  /**
   * Throws StoreUpgradedError when a newer version of the service has migrated the file since it was opened, and
   * StoreFileMovedError when its path no longer leads to it.
   */
  checkSchema(): Promise<void> {
    return this.#committed(() => {
      refuseNewerSchema(this.#reader)
      this.#refuseMovedFile()
    })
  }

  /**
   * Throws StoreFileMovedError when the store's path no longer leads to the file this connection opened (removed, or
   * replaced by another): SQLite in WAL mode goes on committing to the file it holds open, and a write answered 200
   * there would be lost at the next start, which opens what the path leads to.
   */
  #refuseMovedFile(): void {
    if (this.#opened === null) return
    const now = fileIdentity(this.#path)
    if (now !== null && now.dev === this.#opened.dev && now.ino === this.#opened.ino) return
    throw new StoreFileMovedError(
      `the store's file ${this.#path} was ${now === null ? 'removed' : 'replaced by another'} while this process had it open: ` +
        'nothing more is written to it, and a restart opens what the path leads to (what this process holds can be read from ' +
        `its open file, /proc/${process.pid}/fd, until it stops)`,
    )
  }

  /**
   * A copy of the committed data into `file`, a new file: `VACUUM INTO` reads in one transaction of the reader, so
   * the copy is whole and consistent while other connections write (in WAL mode a reader holds no writer back). It is
   * written under a name of its own beside `file`, and takes `file` only once whole and flushed to the disk: VACUUM
   * INTO writes its file in place and does not sync it, so a backup killed midway left under `file` a database cut
   * short (its journal beside it) that a restore took for the store, and that refused the next backup to that name.
   */
  backupTo(file: string): Promise<void> {
    return this.#committed(() => {
      // An existing file is never replaced: refused before the copy, and again when the copy takes the name.
      if (existsSync(file)) throw Object.assign(new Error(`EEXIST: file already exists, backup to '${file}'`), { code: 'EEXIST' })
      const partial = `${file}${PARTIAL_BACKUP}${process.pid}-${randomBytes(4).toString('hex')}`
      // Made first, private as the store's file is.
      closeSync(openSync(partial, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, PRIVATE_FILE_MODE))
      try {
        this.#reader.db.prepare('VACUUM INTO ?').run(partial)
        linkDurably(partial, file)
      } finally {
        rmSync(partial, { force: true })
        rmSync(`${partial}-journal`, { force: true })
      }
    })
  }

  /** Runs `work` in the write transaction `#begin` opened: committed when it returns, rolled back when it throws. */
  #atomically<T>(work: (db: SqlWriter) => T): T {
    const db = this.#writer.db
    try {
      const result = work(this.#writerApi())
      db.exec('COMMIT')
      this.#commits++
      return result
    } catch (error) {
      if (db.isTransaction) db.exec('ROLLBACK')
      throw asSqliteStoreError(error)
    }
  }
}

/**
 * Throws the file system's error (EACCES, EROFS) when this process may not write the SQLite file at `path`, or the
 * log and index beside it. SQLite opens such a database read-only without a word once its log is there (a crash leaves
 * it, and so does a stop in a directory it may not write), and every write then fails: the start must fail instead.
 */
export function refuseReadOnlyFiles(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      accessSync(file, constants.W_OK)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    }
  }
}

interface FileIdentity {
  dev: number
  ino: number
}

/** The device and inode of the file at `path`, or null when there is none. */
function fileIdentity(path: string): FileIdentity | null {
  const stats = statSync(path, { throwIfNoEntry: false })
  return stats ? { dev: stats.dev, ino: stats.ino } : null
}

/**
 * SQLite's error as the port states it: a broken uniqueness rule is StoreConflictError, a full disk (SQLITE_FULL)
 * StoreFullError, a disk that failed a read or write (SQLITE_IOERR) StoreUnconfirmedError, each with SQLite's error as
 * its cause; any other error is kept.
 *
 * SQLITE_IOERR is how SQLite tells a disk quota exceeded (EDQUOT) or a file size limit (EFBIG), not as SQLITE_FULL,
 * and a failing disk (EIO). Not a fault of the work: kept as any other error, it failed an import answered 200 for
 * good, as an internal error. Met at a commit (its sync), the transaction may be there once the file is read again:
 * unconfirmed, an import is run again from its last committed step, and an HTTP write is answered "look before
 * sending it again".
 */
export function asSqliteStoreError(error: unknown): unknown {
  const code = sqliteCode(error)
  if (code === SQLITE_FULL) return new StoreFullError(`the SQLite store's disk is full: ${(error as Error).message}`, { cause: error })
  if (code === SQLITE_IOERR)
    return new StoreUnconfirmedError(`the SQLite store's disk failed a read or write: ${(error as Error).message}`, { cause: error })
  return asStoreError(error, isUniqueViolation)
}

/** A unique index or primary key refused a write. */
function isUniqueViolation(error: unknown): boolean {
  return error instanceof Error && /UNIQUE constraint failed/.test(error.message)
}

const SQLITE_BUSY = 5
const SQLITE_IOERR = 10
const SQLITE_FULL = 13

/** SQLite's primary result code of an error (its extended codes carry it in their low byte); null for another error. */
function sqliteCode(error: unknown): number | null {
  const code = (error as { errcode?: unknown } | null)?.errcode
  return typeof code === 'number' ? code & 0xff : null
}

/**
 * Runs `attempt` again while SQLite refuses it for a lock another connection holds, pausing on a timer rather
 * than inside SQLite (its busy handler sleeps the thread), so that the event loop goes on meanwhile. Past
 * `timeoutMs` it fails with StoreLockedError (a StoreBusyError), SQLite's "database is locked" as its cause.
 */
export async function retriedWhileLocked<T>(attempt: () => T, timeoutMs: number, lock: string): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (let pause = 1; ; pause = Math.min(pause * 2, WRITE_LOCK_MAX_PAUSE_MS)) {
    try {
      return attempt()
    } catch (error) {
      if (!isBusy(error)) throw error
      if (Date.now() >= deadline) throw new StoreLockedError(`another writer held ${lock} for ${timeoutMs} ms`, { cause: error })
    }
    await sleep(pause)
  }
}

/** SQLITE_BUSY (or one of its extended codes): another connection holds the lock. */
function isBusy(error: unknown): boolean {
  return sqliteCode(error) === SQLITE_BUSY
}

function schemaVersion(db: DatabaseSync): number {
  return (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version
}

function refuseNewerSchema(handle: Handle): void {
  const version = (handle.prepare('PRAGMA user_version').get() as { user_version: number }).user_version
  if (version > MIGRATIONS.length) throw newerSchemaError(version)
}

function newerSchemaError(version: number): StoreUpgradedError {
  return new StoreUpgradedError(
    `the store was migrated by a newer version of commission-api (schema ${version}; this version knows ${MIGRATIONS.length}): ` +
      'run that version or a later one, or restore the backup taken before the upgrade',
  )
}

/** A file with tables but no schema version of ours is another application's. */
function refuseForeignDatabase(db: DatabaseSync): void {
  if (schemaVersion(db) === 0 && db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1").get()) {
    throw new ForeignDatabaseError("the file is another application's SQLite database, not commission-api's: point DATA_DIR elsewhere")
  }
}

function migrate(db: DatabaseSync): void {
  // Read first, without the write lock: a store already up to date opens while another process holds that lock
  // (a long import or reset), as every start of the CLI beside a running server does.
  const found = schemaVersion(db)
  if (found > MIGRATIONS.length) throw newerSchemaError(found)
  if (found === MIGRATIONS.length) return
  db.exec('BEGIN IMMEDIATE')
  try {
    const version = schemaVersion(db)
    if (version > MIGRATIONS.length) throw newerSchemaError(version)
    for (let index = version; index < MIGRATIONS.length; index++) db.exec(MIGRATIONS[index])
    if (version < MIGRATIONS.length) db.exec(`PRAGMA user_version = ${MIGRATIONS.length}`)
    db.exec('COMMIT')
  } catch (error) {
    db.exec('ROLLBACK')
    throw error
  }
}
