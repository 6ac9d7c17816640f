import type { Document } from 'bson'
import type { ClientSession, Collection } from 'mongodb'
import type { SerialQueue } from '../shared/serial-queue.ts'
import type { Codec } from './codec.ts'
import { inTransaction, type MongoConnection, toPortError, toPortErrorInTransaction } from './connection.ts'

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
 * Runs one operation of the port: in the transaction's session when there is one, and with MongoDB's
 * duplicate-key error turned into StoreConflictError.
 */
export async function call<T>(context: MongoContext, work: (session: ClientSession | undefined) => Promise<T>): Promise<T> {
  if (context.state.closed) throw new Error('the MongoDB store is closed')
  const transaction = context.transaction
  if (!transaction) {
    try {
      return await work(undefined)
    } catch (error) {
      throw toPortError(error)
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
 * one, else in a transaction of its own.
 */
export async function atomically<T>(context: MongoContext, work: (session: ClientSession | undefined) => Promise<T>): Promise<T> {
  if (context.transaction) return call(context, work)
  return call(context, () => inTransaction(context.connection.client, work))
}
