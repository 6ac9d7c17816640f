import { Binary } from 'bson'

/**
 * A value too large for one MongoDB document (16 MiB at most) kept as its JSON text in parts: a call's payload
 * (`payload-parts.ts`), a company's origin (`company-origins.ts`).
 */

/** Bytes of JSON per part: half the document limit, so that a part and the fields beside it always fit. */
export const PART_BYTES = 8 * 1024 * 1024

/** A value as its JSON text, in parts of at most PART_BYTES. JSON text is never empty: there is always a first part. */
export function jsonParts(value: unknown): Binary[] {
  const json = Buffer.from(JSON.stringify(value))
  const chunks: Binary[] = []
  for (let start = 0; start < json.length; start += PART_BYTES) chunks.push(new Binary(json.subarray(start, start + PART_BYTES)))
  return chunks
}

/** The value whose JSON text `jsonParts` split, from its parts in order. */
export function fromJsonParts(parts: readonly Binary[]): unknown {
  return JSON.parse(Buffer.concat(parts.map((part) => part.value())).toString('utf8'))
}
