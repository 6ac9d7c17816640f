import {
  type ClientSession,
  type Db,
  MongoBulkWriteError,
  MongoClient,
  MongoError,
  MongoErrorLabel,
  MongoNetworkError,
  MongoServerError,
  MongoServerSelectionError,
  MongoWriteConcernError,
  type TransactionOptions,
} from 'mongodb'
import { StoreUnconfirmedError } from '../port.ts'
import { asStoreError } from '../shared/conflicts.ts'
import { DEFAULT_DATABASE, databaseInUrl } from './url.ts'

export { DEFAULT_DATABASE, databaseInUrl }

/**
 * Every write waits for a majority of the replica set and the journal, so an acknowledged write survives the
 * loss of the primary; reads outside a transaction see majority-committed data only. `ignoreUndefined` keeps
 * an undefined field out of the document instead of storing null (the BSON serializer's default is null).
 */
const CLIENT_OPTIONS = {
  appName: 'commission-api',
  ignoreUndefined: true,
  retryWrites: true,
  writeConcern: { w: 'majority', journal: true },
  readConcern: { level: 'majority' },
  readPreference: 'primary',
} as const

/**
 * A transaction reads one snapshot and commits with a majority write concern: no other reader sees a part of
 * it, and once it is acknowledged it is durable.
 */
export const TRANSACTION_OPTIONS: TransactionOptions = {
  readConcern: { level: 'snapshot' },
  writeConcern: { w: 'majority', journal: true },
  readPreference: 'primary',
}

export interface MongoConnection {
  client: MongoClient
  db: Db
}

/**
 * Connects and checks that the deployment can run transactions: a replica set member (a single-node replica
 * set will do) or a sharded cluster's mongos. A standalone mongod cannot, and every atomic write of the store
 * needs one, so it is refused at start-up with a message that says what to do.
 */
export async function connectMongo(url: string, database?: string): Promise<MongoConnection> {
  const client = new MongoClient(url, CLIENT_OPTIONS)
  try {
    await client.connect()
    // `hello` answers `setName` on a replica set member and `msg: "isdbgrid"` on a mongos.
    const hello = await client.db('admin').command({ hello: 1 })
    if (typeof hello.setName !== 'string' && hello.msg !== 'isdbgrid') {
      throw new Error(
        'MONGODB_URL names a standalone MongoDB server, which cannot run transactions: start mongod with --replSet <name> ' +
          'and run rs.initiate() once (a single-node replica set will do), or point MONGODB_URL at a replica set or a mongos.',
      )
    }
    return { client, db: client.db(database ?? databaseInUrl(url) ?? DEFAULT_DATABASE) }
  } catch (error) {
    await client.close()
    throw error
  }
}

/** MongoDB's duplicate key error: a unique index refused a write. */
const DUPLICATE_KEY = 11000

export function isDuplicateKey(error: unknown): boolean {
  // A bulk write (insertMany, bulkWrite) reports the code of its first write error as its own.
  return error instanceof MongoServerError && error.code === DUPLICATE_KEY
}

/**
 * A driver error as the port states it, once no retry of the driver's is left to make, for a read outside a
 * transaction or a transaction (after `withTransaction` gave up): a broken uniqueness rule becomes StoreConflictError;
 * a transaction that stayed transient (it kept conflicting, or lost its connection, and was aborted: nothing of it
 * committed), or a read or transaction the deployment could not serve (`isUnavailable`), StoreBusyError; a commit
 * whose result stayed unknown (see `inTransaction`), StoreUnconfirmedError: it may have committed; anything else is kept.
 */
export function toPortError(error: unknown): unknown {
  const mapped = asStoreError(error, isDuplicateKey, isBusy)
  return mapped === error && isUnknownCommit(error) ? new StoreUnconfirmedError((error as Error).message, { cause: error }) : mapped
}

/**
 * The same for a write outside a transaction, which may have been applied although the deployment could not serve
 * it: the driver retries a one-document write once, after selecting a server again, so a lost connection or no primary
 * may follow a first attempt whose answer was lost; a write of several documents gets one attempt, and may be half
 * done. So it is StoreUnconfirmedError, never StoreBusyError ("nothing was done"), as is a commit whose result stayed
 * unknown, and a write concern error (the primary applied the write; whether it stays is unknown), but for a
 * transaction the write ran first and that was aborted, having written nothing (a company's deletion outside a
 * transaction).
 */
export function toPortErrorOfWrite(error: unknown): unknown {
  const mapped = asStoreError(error, isDuplicateKey, isAbortedTransaction)
  return mapped === error && (isUnserved(error) || isUnknownCommit(error) || isWriteConcernFailure(error))
    ? new StoreUnconfirmedError((error as Error).message, { cause: error })
    : mapped
}

/**
 * The same inside a transaction, where a transient error must reach `withTransaction` as the driver's own error,
 * which it recognises and runs the transaction again for.
 */
export function toPortErrorInTransaction(error: unknown): unknown {
  return asStoreError(error, isDuplicateKey)
}

/**
 * A transaction aborted, or a read or transaction the deployment could not serve: nothing of it was written. Or a
 * write concern error of a write that `toPortError` maps (`writeUnseen`, a rate window's hit: writes safe to make
 * again), which the primary applied but may not keep: made again, it does no harm. (A commit's write concern error
 * is labelled an unknown commit result by the driver, which stays StoreUnconfirmedError.)
 */
function isBusy(error: unknown): boolean {
  return (
    isAbortedTransaction(error) ||
    isUnserved(error) ||
    (isWriteConcernFailure(error) && !(error as MongoError).hasErrorLabel(MongoErrorLabel.UnknownTransactionCommitResult))
  )
}

/** A transaction `withTransaction` gave up on as transient: the server aborted it, and nothing of it committed. */
function isAbortedTransaction(error: unknown): boolean {
  return (
    error instanceof MongoError &&
    !error.hasErrorLabel(MongoErrorLabel.UnknownTransactionCommitResult) &&
    error.hasErrorLabel(MongoErrorLabel.TransientTransactionError)
  )
}

/** An operation the deployment could not serve (`isUnavailable`), other than a commit whose result stayed unknown. */
function isUnserved(error: unknown): error is MongoError {
  return error instanceof MongoError && !error.hasErrorLabel(MongoErrorLabel.UnknownTransactionCommitResult) && isUnavailable(error)
}

/** A commit whose result stayed unknown: the transaction may have committed, or not. */
function isUnknownCommit(error: unknown): boolean {
  return error instanceof MongoError && error.hasErrorLabel(MongoErrorLabel.UnknownTransactionCommitResult)
}

/**
 * A write concern error, which the server answers once the primary applied the write, when it could not confirm the
 * write concern (a majority, the journal): the write may stay, or be rolled back. A bulk write (insertMany, bulkWrite)
 * reports one as a MongoBulkWriteError whose result holds it.
 */
function isWriteConcernFailure(error: unknown): boolean {
  return (
    error instanceof MongoWriteConcernError || (error instanceof MongoBulkWriteError && error.result.getWriteConcernError() !== undefined)
  )
}

/**
 * The server codes of a node that cannot serve for now (no longer primary, stepping down, shutting down, unreachable
 * from a mongos): those of the retryable-reads specification, which the driver keeps to itself (`isRetryableReadError`
 * is not exported).
 */
const UNAVAILABLE_CODES: ReadonlySet<number> = new Set([
  6, // HostUnreachable
  7, // HostNotFound
  89, // NetworkTimeout
  91, // ShutdownInProgress
  134, // ReadConcernMajorityNotAvailableYet
  189, // PrimarySteppedDown
  262, // ExceededTimeLimit
  9001, // SocketException
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
])

/**
 * The deployment could not serve an operation for now, which the driver already retried once where it could: the
 * connection was lost, no server could be selected (no primary during a failover), a node answered it cannot serve
 * (a code above, a retryable write error, or overloaded). A write concern error is not one (`isWriteConcernFailure`):
 * the write was applied on the primary, and whether it stays is unknown, as with an unknown commit result; a bulk
 * write's carries the write concern error's code (91, 189, 11602...) as its own.
 */
function isUnavailable(error: MongoError): boolean {
  if (isWriteConcernFailure(error)) return false
  if (error instanceof MongoNetworkError || error instanceof MongoServerSelectionError) return true
  if (error.hasErrorLabel(MongoErrorLabel.RetryableWriteError) || error.hasErrorLabel(MongoErrorLabel.SystemOverloadedError)) return true
  return UNAVAILABLE_CODES.has(Number(error.code))
}

/**
 * Runs an upsert of one document outside any transaction. The first two upserts of a document may both try to
 * insert it; the loser fails with a duplicate key, and its second try finds the winner's document and updates it.
 */
export async function upsertOnce<T>(upsert: () => Promise<T>): Promise<T> {
  try {
    return await upsert()
  } catch (error) {
    if (!isDuplicateKey(error)) throw error
    return upsert()
  }
}

/**
 * Runs `work` in a transaction on a new session. `withTransaction` commits when `work` resolves and aborts
 * when it rejects; it runs `work` again when the server labels an error TransientTransactionError (a write
 * conflict with another transaction) and retries the commit on UnknownTransactionCommitResult, for up to
 * 120 seconds. Since driver 6 it resolves with what `work` resolved with. `work` must use the session for
 * every operation, one at a time, and must let every error of an operation reject its promise: a swallowed
 * error leaves the driver unable to tell whether the server aborted the transaction.
 *
 * Once `work` resolved, the deployment failing to serve (`isUnavailable`) with neither label is taken for a commit
 * whose result is unknown, and labelled so: when a commit's first attempt is retryable (its connection lost) and its
 * retry cannot select a server, the driver (lib/sessions.js, `commitTransaction`) labels the retry's error only when it
 * is itself retryable, which a server selection error is not, and `withTransaction` rejects with it unlabelled,
 * though the first attempt may have committed. A commit whose first attempt found no server, so never left, is taken
 * for one too: the driver's error does not tell the two apart, and "may have been done" is the answer that is true.
 */
export async function inTransaction<T>(client: MongoClient, work: (session: ClientSession) => Promise<T>): Promise<T> {
  const session = client.startSession()
  // Whether `work` resolved in the current attempt: `withTransaction` runs it again after a transient error.
  let committing = false
  try {
    return await session.withTransaction(async (active) => {
      committing = false
      const result = await work(active)
      committing = true
      return result
    }, TRANSACTION_OPTIONS)
  } catch (error) {
    if (committing && isUnserved(error) && !error.hasErrorLabel(MongoErrorLabel.TransientTransactionError)) {
      error.addErrorLabel(MongoErrorLabel.UnknownTransactionCommitResult)
    }
    throw error
  } finally {
    await session.endSession()
  }
}
