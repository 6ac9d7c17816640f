import type { Document } from 'bson'
import type { AnyBulkWriteOperation, ClientSession } from 'mongodb'
import type { OffsetWindow } from '../port.ts'
import { type Codec, decode, encode, lookupIds } from './codec.ts'
import { atomically, call, collectionOf, inSession, type MongoContext, read } from './context.ts'
import { byId, cursorId, inCompany } from './filters.ts'

/**
 * The operations the repositories of the MongoDB adapter are made of: each one call of the driver in the
 * context's session, or several in one transaction where the port promises a multi-document write is atomic.
 */

export async function findOne<T>(context: MongoContext, codec: Codec, filter: Document): Promise<T | null> {
  return read(context, async (session) => {
    const document = await collectionOf(context, codec).findOne(filter, inSession(session))
    return document ? decode<T>(codec, document) : null
  })
}

/**
 * The matching documents in id order (creation order), optionally within an offset window. With a `projection`
 * (fields to include, as in MongoDB's find), each document holds only those fields and its id.
 */
export async function findAll<T>(
  context: MongoContext,
  codec: Codec,
  filter: Document,
  window?: OffsetWindow,
  projection?: Document,
): Promise<T[]> {
  // A limit of 0 means "no limit" to MongoDB: a window of no rows is answered here.
  if (window && window.limit <= 0) return []
  const seek = window?.afterId !== undefined
  // A v1 offset may be far beyond any count: past 2^53 it cannot even be sent exactly, and it skips every row.
  if (window && !seek && !Number.isSafeInteger(window.offset)) return []
  return read(context, async (session) => {
    const cursor = collectionOf(context, codec).find(seek ? { ...filter, _id: { $gt: cursorId(window.afterId!) } } : filter, {
      ...inSession(session),
      sort: { _id: 1 },
      ...(projection ? { projection } : {}),
    })
    if (window) cursor.skip(seek ? 0 : window.offset).limit(window.limit)
    return (await cursor.toArray()).map((document) => decode<T>(codec, document))
  })
}

/** The first `limit` matching documents in id order, each with only the fields of `projection` when one is given. */
export async function findFirst<T>(
  context: MongoContext,
  codec: Codec,
  filter: Document,
  limit: number,
  projection?: Document,
): Promise<T[]> {
  return findAll<T>(context, codec, filter, { offset: 0, limit }, projection)
}

/** The greatest id among the matching documents, null when none match (an index on the filter's fields and `_id` serves it). */
export async function lastIdOf(context: MongoContext, codec: Codec, filter: Document): Promise<string | null> {
  return read(context, async (session) => {
    const last = await collectionOf(context, codec).findOne(filter, { ...inSession(session), sort: { _id: -1 }, projection: { _id: 1 } })
    return last ? String(last._id) : null
  })
}

/** How many documents match; `countDocuments` runs an aggregation, which a transaction allows. */
export async function countAll(context: MongoContext, codec: Codec, filter: Document): Promise<number> {
  return read(context, (session) => collectionOf(context, codec).countDocuments(filter, inSession(session)))
}

export async function insertOne(context: MongoContext, codec: Codec, record: object): Promise<void> {
  await call(context, (session) => collectionOf(context, codec).insertOne(encode(codec, record), inSession(session)))
}

/** Inserts records in order, all or none. */
export async function insertAll(context: MongoContext, codec: Codec, records: readonly object[]): Promise<void> {
  // The driver refuses an empty batch.
  if (records.length === 0) return
  if (records.length === 1) return insertOne(context, codec, records[0])
  const documents = records.map((record) => encode(codec, record))
  await atomically(context, (session) => collectionOf(context, codec).insertMany(documents, { ...inSession(session), ordered: true }))
}

/** The bulk operations that write one document: atomic by themselves, and retried by the driver after a failover. */
const ONE_DOCUMENT = new Set(['insertOne', 'updateOne', 'replaceOne', 'deleteOne'])

/** Applies write operations in order, all or none. */
export async function writeAll(context: MongoContext, codec: Codec, operations: AnyBulkWriteOperation<Document>[]): Promise<void> {
  if (operations.length === 0) return
  const write = (session: ClientSession | undefined) =>
    collectionOf(context, codec).bulkWrite(operations, { ...inSession(session), ordered: true })
  // One write of one document is atomic on its own. Several writes, or one `deleteMany` or `updateMany`, need
  // a transaction: a multi-document write is atomic per document only, and is not retried after a failover.
  const oneDocument = operations.length === 1 && ONE_DOCUMENT.has(Object.keys(operations[0])[0])
  await (oneDocument ? call(context, write) : atomically(context, write))
}

/**
 * Replaces each record by (company, id), inserting it when absent. An id of another company matches nothing,
 * and its insert is then refused by the unique _id index (StoreConflictError) instead of touching that
 * company's record; a unique index of the collection (an email, an external id) refuses a taken value.
 * `shardKeyFields` gives the fields of the collection's shard key beyond the company (docs/scaling.md): an
 * upsert on a sharded collection must name the whole shard key in its filter.
 */
export function replaceById<T extends { id: string }>(
  codec: Codec,
  companyId: string,
  saved: readonly T[],
  shardKeyFields: (record: T) => Document = () => ({}),
): AnyBulkWriteOperation<Document>[] {
  return saved.map((record) => ({
    replaceOne: {
      filter: byId(companyId, record.id, shardKeyFields(record)),
      replacement: encode(codec, { ...record, company_id: companyId }),
      upsert: true,
    },
  }))
}

/** `replaceById` for records that name their company (statements, lines, plans): each is written under its own. */
export function replaceOwnById<T extends { id: string; company_id: string }>(
  codec: Codec,
  saved: readonly T[],
): AnyBulkWriteOperation<Document>[] {
  return saved.flatMap((record) => replaceById(codec, record.company_id, [record]))
}

/**
 * The ids one `deleteMany` of `deleteByIds` names. An ObjectId costs about 20 bytes of BSON in an `$in` list, so some
 * 840,000 of them (a plan's lines, say) would make a command larger than the 16 MiB MongoDB accepts.
 */
export const IDS_PER_DELETE = 100_000

/**
 * Deletes by id, in a `deleteMany` per IDS_PER_DELETE ids, all in one transaction (the caller's, or its own): one
 * such call is not atomic alone.
 */
export async function deleteByIds(context: MongoContext, codec: Codec, companyId: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return
  const all = lookupIds(ids)
  await atomically(context, async (session: ClientSession | undefined) => {
    for (let start = 0; start < all.length; start += IDS_PER_DELETE) {
      const slice = all.slice(start, start + IDS_PER_DELETE)
      await collectionOf(context, codec).deleteMany(inCompany(companyId, { _id: { $in: slice } }), inSession(session))
    }
  })
}
