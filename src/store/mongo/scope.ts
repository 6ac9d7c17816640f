import type { Document } from 'bson'
import type { AnyBulkWriteOperation, ClientSession, Collection } from 'mongodb'
import type { OffsetWindow } from '../port.ts'
import type { SerialQueue } from '../shared/serial-queue.ts'
import { type Codec, decode, encode } from './codec.ts'
import { inTransaction, type MongoConnection, toPortError } from './connection.ts'

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
export interface Scope {
  connection: MongoConnection
  transaction: OpenTransaction | null
  /** Shared by a store and every transaction store made from it. `writes`: see `Store.committedWrites`. */
  state: { closed: boolean; writes: number }
}

/**
 * Counts a write of companies, users or API keys (`Store.committedWrites`) once it is over, whatever its
 * outcome. Inside a transaction it is counted again when the transaction is over.
 */
export async function counted<T>(scope: Scope, write: Promise<T>): Promise<T> {
  try {
    return await write
  } finally {
    scope.state.writes++
  }
}

export function collectionOf(scope: Scope, codec: Codec): Collection<Document> {
  return scope.connection.db.collection(codec.collection)
}

/** The options that put an operation in the session, when there is one. */
export function inSession(session: ClientSession | undefined): { session?: ClientSession } {
  return session ? { session } : {}
}

/**
 * Runs one operation of the port: in the transaction's session when there is one, and with MongoDB's
 * duplicate-key error turned into StoreConflictError.
 */
export async function call<T>(scope: Scope, work: (session: ClientSession | undefined) => Promise<T>): Promise<T> {
  if (scope.state.closed) throw new Error('the MongoDB store is closed')
  const transaction = scope.transaction
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
      throw toPortError(error)
    }
  })
}

/**
 * Runs an operation that writes several documents, atomically: inside the caller's transaction when there is
 * one, else in a transaction of its own.
 */
export async function atomically<T>(scope: Scope, work: (session: ClientSession | undefined) => Promise<T>): Promise<T> {
  if (scope.transaction) return call(scope, work)
  return call(scope, () => inTransaction(scope.connection.client, work))
}

export async function findOne<T>(scope: Scope, codec: Codec, filter: Document): Promise<T | null> {
  return call(scope, async (session) => {
    const document = await collectionOf(scope, codec).findOne(filter, inSession(session))
    return document ? decode<T>(codec, document) : null
  })
}

/**
 * The matching documents in id order (creation order), optionally within an offset window. With a `projection`
 * (fields to include, as in MongoDB's find), each document holds only those fields and its id.
 */
export async function findAll<T>(scope: Scope, codec: Codec, filter: Document, window?: OffsetWindow, projection?: Document): Promise<T[]> {
  // A limit of 0 means "no limit" to MongoDB: a window of no rows is answered here.
  if (window && window.limit <= 0) return []
  // A v1 offset may be far beyond any count: past 2^53 it cannot even be sent exactly, and it skips every row.
  if (window && !Number.isSafeInteger(window.offset)) return []
  return call(scope, async (session) => {
    const cursor = collectionOf(scope, codec).find(filter, { ...inSession(session), sort: { _id: 1 }, ...(projection ? { projection } : {}) })
    if (window) cursor.skip(window.offset).limit(window.limit)
    return (await cursor.toArray()).map((document) => decode<T>(codec, document))
  })
}

/** The first `limit` matching documents in id order, each with only the fields of `projection` when one is given. */
export async function findFirst<T>(scope: Scope, codec: Codec, filter: Document, limit: number, projection?: Document): Promise<T[]> {
  return findAll<T>(scope, codec, filter, { offset: 0, limit }, projection)
}

/** How many documents match; `countDocuments` runs an aggregation, which a transaction allows. */
export async function countAll(scope: Scope, codec: Codec, filter: Document): Promise<number> {
  return call(scope, (session) => collectionOf(scope, codec).countDocuments(filter, inSession(session)))
}

export async function insertOne(scope: Scope, codec: Codec, record: object): Promise<void> {
  await call(scope, (session) => collectionOf(scope, codec).insertOne(encode(codec, record), inSession(session)))
}

/** Inserts records in order, all or none. */
export async function insertAll(scope: Scope, codec: Codec, records: readonly object[]): Promise<void> {
  // The driver refuses an empty batch.
  if (records.length === 0) return
  if (records.length === 1) return insertOne(scope, codec, records[0])
  const documents = records.map((record) => encode(codec, record))
  await atomically(scope, (session) => collectionOf(scope, codec).insertMany(documents, { ...inSession(session), ordered: true }))
}

/** The bulk operations that write one document: atomic by themselves, and retried by the driver after a failover. */
const ONE_DOCUMENT = new Set(['insertOne', 'updateOne', 'replaceOne', 'deleteOne'])

/** Applies write operations in order, all or none. */
export async function writeAll(scope: Scope, codec: Codec, operations: AnyBulkWriteOperation<Document>[]): Promise<void> {
  if (operations.length === 0) return
  const write = (session: ClientSession | undefined) =>
    collectionOf(scope, codec).bulkWrite(operations, { ...inSession(session), ordered: true })
  // One write of one document is atomic on its own. Several writes, or one `deleteMany` or `updateMany`, need
  // a transaction: a multi-document write is atomic per document only, and is not retried after a failover.
  const oneDocument = operations.length === 1 && ONE_DOCUMENT.has(Object.keys(operations[0])[0])
  await (oneDocument ? call(scope, write) : atomically(scope, write))
}
