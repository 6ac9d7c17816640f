import type { Document } from 'bson'
import type { ClientSession, Collection } from 'mongodb'
import type { SerialQueue } from '../shared/serial-queue.ts'
import type { Codec } from './codec.ts'
import { inTransaction, type MongoConnection, toPortError, toPortErrorInTransaction, toPortErrorOfWrite } from './connection.ts'

/** An open transaction of `Store.transaction`. */
export interface OpenTransaction {
  session: ClientSession
  /**
   * The first error of an operation inside the transaction. The server may have aborted the transaction
   * with it, so the transaction ends with this error even when the work caught it (see `transaction`).
   */
  failure?: unknown
  /** A session runs one operation at a time: calls made without awaiting each other wait their turn. */
  queue: SerialQueue
}

/** What every repository of one store works with: the connection, and the transaction it belongs to, if any. */
export interface MongoContext {
  connection: MongoConnection
  transaction: OpenTransaction | null
  /** Shared by a store and every transaction store made from it. `writes`: see `Store.committedWrites`. */
  state: { closed: boolean; writes: number }
}

/**
 * Counts a write of companies, users or API keys (`Store.committedWrites`) once it is over, whatever its
 * outcome. Inside a transaction it is counted again when the transaction is over.
 */
export async function counted<T>(context: MongoContext, write: Promise<T>): Promise<T> {
  try {
    return await write
  } finally {
    context.state.writes++
  }
}

export function collectionOf(context: MongoContext, codec: Codec): Collection<Document> {
  return context.connection.db.collection(codec.collection)
}

/** The options that put an operation in the session, when there is one. */
export function inSession(session: ClientSession | undefined): { session?: ClientSession } {
  return session ? { session } : {}
}

/**
 * Runs one read of the port, in the transaction's session when there is one. Outside a transaction, a read the
 * deployment could not serve is StoreBusyError (`toPortError`): it changed nothing, and may succeed later.
 */
export async function read<T>(context: MongoContext, work: (session: ClientSession | undefined) => Promise<T>): Promise<T> {
  return run(context, work, toPortError)
}

/**
 * Runs one write of the port, in the transaction's session when there is one. Outside a transaction, a write the
 * deployment could not serve is StoreUnconfirmedError (`toPortErrorOfWrite`): it may have been applied.
 */
export async function call<T>(context: MongoContext, work: (session: ClientSession | undefined) => Promise<T>): Promise<T> {
  return run(context, work, toPortErrorOfWrite)
}

/**
 * Runs a write outside a transaction that the caller's next attempt makes again harmlessly: of the store's own
 * bookkeeping, which no caller of the port sees (a lock document's creation, the parts of a payload no document refers
 * to yet), or one that done twice is done once (the controlled clock raised to an instant, a `$max`): one the
 * deployment could not serve is StoreBusyError, as a read's, whether or not it was applied.
 */
export async function writeUnseen<T>(context: MongoContext, work: (session: ClientSession | undefined) => Promise<T>): Promise<T> {
  return run(context, work, toPortError)
}

/**
 * Runs one operation of the port: in the transaction's session when there is one, and with MongoDB's duplicate-key
 * error turned into StoreConflictError; outside a transaction, `outside` states any other error as the port does.
 */
async function run<T>(
  context: MongoContext,
  work: (session: ClientSession | undefined) => Promise<T>,
  outside: (error: unknown) => unknown,
): Promise<T> {
  if (context.state.closed) throw new Error('the MongoDB store is closed')
  const transaction = context.transaction
  if (!transaction) {
    try {
      return await work(undefined)
    } catch (error) {
      throw outside(error)
    }
  }
  return transaction.queue.run(async () => {
    try {
      return await work(transaction.session)
    } catch (error) {
      transaction.failure ??= error
      throw toPortErrorInTransaction(error)
    }
  })
}

/**
 * Runs an operation that writes several documents, atomically: inside the caller's transaction when there is
 * one, else in a transaction of its own, whose errors are a transaction's (`toPortError`): aborted, it wrote nothing.
 */
export async function atomically<T>(context: MongoContext, work: (session: ClientSession | undefined) => Promise<T>): Promise<T> {
  if (context.transaction) return call(context, work)
  return run(context, () => inTransaction(context.connection.client, work), toPortError)
}
