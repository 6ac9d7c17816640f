import { type Document, ObjectId } from 'bson'
import { isObjectId } from '../../domain/ids.ts'

/**
 * Records ⇄ MongoDB documents, at the adapter's edge. Above the port an id is a 24-hex string; in MongoDB it
 * is an ObjectId (12 bytes, sorted as the hex text sorts). A record's `id` becomes `_id`, and every field that
 * holds another record's id (`company_id`, `user_id`, ...) is an ObjectId too, so that filters and indexes
 * compare ObjectIds with ObjectIds. Every other field is stored as it is: times stay ISO strings, whose text
 * order is time order, exactly as in the SQLite adapter.
 */
export interface Codec {
  /** The collection's name. */
  readonly collection: string
  /** The fields, besides `id`, that hold ids. */
  readonly references: readonly string[]
  /** Fields the adapter stores only to query on (e.g. a lower-case email), computed from the record. */
  readonly derived?: Derived
}

export interface Derived {
  readonly fields: readonly string[]
  compute(record: Record<string, unknown>): Document
}

/** A record's id as an ObjectId. A store id is always canonical (lower-case hex): anything else is refused. */
export function toObjectId(id: string): ObjectId {
  if (!isObjectId(id)) throw new TypeError(`not an ObjectId: ${JSON.stringify(id)}`)
  return ObjectId.createFromHexString(id)
}

/**
 * An id to look a document up by. A string that is not a canonical ObjectId stays a string: MongoDB compares
 * values of different BSON types as unequal, so it matches no stored ObjectId, as an unknown id should.
 */
export function lookupId(id: string): ObjectId | string {
  return isObjectId(id) ? ObjectId.createFromHexString(id) : id
}

/** The ids to look documents up by, without repeats. */
export function lookupIds(ids: readonly string[]): Array<ObjectId | string> {
  return [...new Set(ids)].map(lookupId)
}

function fromStoredId(value: unknown): unknown {
  return value instanceof ObjectId ? value.toHexString() : value
}

/** The document that stores `record`. */
export function encode(codec: Codec, record: object): Document {
  const { id, ...fields } = record as Record<string, unknown> & { id: string }
  const document: Document = { _id: toObjectId(id), ...fields }
  for (const field of codec.references) {
    const value = document[field]
    // A reference may name a record that no longer exists, or be null; only a canonical id becomes an ObjectId,
    // so that any other value reads back exactly as it was written.
    if (typeof value === 'string') document[field] = lookupId(value)
  }
  if (codec.derived) Object.assign(document, codec.derived.compute(record as Record<string, unknown>))
  return document
}

/** The record a stored document holds: `_id` back to `id`, ObjectIds back to hex strings, derived fields dropped. */
export function decode<T>(codec: Codec, document: Document): T {
  const { _id, ...fields } = document
  const record: Record<string, unknown> = { id: fromStoredId(_id), ...fields }
  for (const field of codec.references) {
    if (field in record) record[field] = fromStoredId(record[field])
  }
  for (const field of codec.derived?.fields ?? []) delete record[field]
  return record as T
}
