import { type Binary, type Document, ObjectId } from 'bson'
import type { ImportPayload } from '../model.ts'
import { decode, encode } from './codec.ts'
import { IMPORT_PAYLOADS } from './collections.ts'
import { fromJsonParts, jsonParts } from './json-parts.ts'

/**
 * How a call's payload is stored. Its items would not always fit one MongoDB document (16 MiB at most) as an
 * array: a body within the request limit can take about five times its JSON size in BSON (an array of small
 * numbers costs a type byte, its index as a key and the number). So the items are stored as their JSON text, in
 * parts of PART_BYTES: the first in the payload's document (the only one for any call of usual size), the
 * others each in a document of `import_payload_parts` (`json-parts.ts`). JSON text is also what the SQLite
 * adapter stores, so a payload reads back the same from both.
 */

/** The document of a payload, holding the first part of its items, and the documents of the other parts. */
export interface StoredPayload {
  payload: Document
  parts: Document[]
}

/** How `payload` is stored: its items as JSON text, split in parts of at most PART_BYTES. */
export function storedPayload(payload: ImportPayload): StoredPayload {
  const { items, ...fields } = payload
  const chunks = jsonParts(items)
  const [first, ...others] = chunks
  const document = encode(IMPORT_PAYLOADS, { ...fields, items_json: first, items_parts: chunks.length })
  const parts = others.map((bytes, index) => ({
    _id: new ObjectId(),
    company_id: document.company_id,
    payload_id: document._id,
    index: index + 1,
    bytes,
  }))
  return { payload: document, parts }
}

/** How many parts a stored payload's items are in (1: all in its own document). */
export function partCount(document: Document): number {
  return typeof document.items_parts === 'number' ? document.items_parts : 1
}

/** The payload a stored document holds, given the documents of its other parts (any order). */
export function payloadFrom(document: Document, parts: readonly Document[]): ImportPayload {
  // `position` orders an import's payloads (imports.ts); it is not part of the payload.
  const {
    items_json: first,
    items_parts: _count,
    position: _position,
    items,
    ...fields
  } = decode<Record<string, unknown>>(IMPORT_PAYLOADS, document)
  // A payload stored before parts existed holds its items as an array.
  if (Array.isArray(items)) return { ...fields, items } as unknown as ImportPayload
  const others = parts.toSorted((a, b) => Number(a.index) - Number(b.index)).map((part) => part.bytes as Binary)
  if (others.length !== partCount(document) - 1)
    throw new Error(`payload ${String(document._id)}: ${others.length + 1} of its ${partCount(document)} parts are stored`)
  return { ...fields, items: fromJsonParts([first as Binary, ...others]) as unknown[] } as unknown as ImportPayload
}
