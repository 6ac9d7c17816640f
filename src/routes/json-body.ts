import type { FastifyInstance } from 'fastify'
import { ValidationError } from '../errors.ts'

/**
 * How deeply a JSON request body may nest, the body itself being level 1. A record, a user or an attribution
 * sits at level 2 or 3, its values one level below; 32 leaves room for any object value a client has reason to
 * send. A deeper body is refused at the request (400), before anything is stored, because a stored payload must
 * never make its import fail for a reason of ours: JSON.stringify overflows the stack a few thousand levels
 * down, SQLite's JSON functions refuse more than 1,000 levels and MongoDB more than 100.
 */
export const MAX_JSON_DEPTH = 32

/** What the body parser puts in place of an integer a number holds only rounded: its text as sent. */
export class InexactInteger {
  readonly source: string
  constructor(source: string) {
    this.source = source
  }
}

/**
 * An integer of 16 digits or more (2^53 has 16) where a value starts, or such text in a string. At most 309: one
 * longer is infinite, refused as too large anyway, and an unbounded run overflowed the stack on ten million digits,
 * which the JSON parser took for a body that is not JSON.
 */
const LONG_INTEGER = /[[:,]\s*(-?\d{16,309})(?![\d.eE])/g

/**
 * Whether the integer `digits` reads as a number that JavaScript writes otherwise, as the service then keeps it (an
 * id is matched as its text): a client whose integers are exact meant another value (Python's 9007199254740993 reads
 * as 9007199254740992, and its 1152921504606846976, 2^60, would be the id 1152921504606847000), where JavaScript's
 * JSON.stringify of a large number wrote the number it holds (2^60 as 1152921504606847000). An infinite one is
 * refused as too large (`unstorablePart`).
 */
function readsRounded(digits: string, value: number): boolean {
  return Number.isFinite(value) && String(value) !== digits
}

/** True when the text may hold an integer a number holds only rounded (`readsRounded`). */
function mayHoldInexactInteger(text: string): boolean {
  for (const [, digits] of text.matchAll(LONG_INTEGER)) if (readsRounded(digits, Number(digits))) return true
  return false
}

/**
 * The body parsed again, each integer a number holds only rounded replaced by an `InexactInteger`, when the text may
 * hold one (rarely: a parse with a reviver costs about eight times the plain one); else the body as parsed. Here, not
 * with the body parser: the CLI reads its JSON files so too, and Fastify alone would cost each command 50 ms to load.
 */
export function markingInexactIntegers(text: string, parsed: unknown): unknown {
  // The text's look also finds digits inside strings (`"a,12345678901234567"`), which any client may send: only a
  // body that holds such a number is parsed again, which a large one holding those digits alone made cost 4.5 times.
  if (!mayHoldInexactInteger(text) || !holdsNumberPast2To53(parsed)) return parsed
  try {
    return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) => {
      const source = context?.source
      if (typeof value !== 'number' || Number.isSafeInteger(value) || !source || !/^-?\d+$/.test(source)) return value
      return readsRounded(source, value) ? new InexactInteger(source) : value
    })
  } catch {
    // The reviver recurses: a body nested deeply enough to overflow the stack is refused for its depth anyway.
    return parsed
  }
}

/** Whether a number of the parsed body is at least 2^53 in size, where numbers are integers held only as rounded. */
function holdsNumberPast2To53(parsed: unknown): boolean {
  const pending: unknown[] = [parsed]
  while (pending.length > 0) {
    const value = pending.pop()
    if (typeof value === 'number') {
      if (Number.isFinite(value) && !Number.isSafeInteger(value) && Number.isInteger(value)) return true
    } else if (typeof value === 'object' && value !== null) {
      for (const child of Object.values(value)) pending.push(child)
    }
  }
  return false
}

/** A part of a JSON body that could not be stored as it was sent, and where it is (keys and indexes). */
export interface UnstorablePart {
  path: (string | number)[]
  problem: string
}

/**
 * The first part of a parsed JSON body that could not be stored as sent, or null when all of it can:
 * - a value nested deeper than `depthLimit` levels;
 * - a number past what a number holds (`1e400`): JSON.parse makes it infinite, which a stored payload writes as
 *   null, so that the import would empty the field the client meant to set;
 * - an integer past 2^53 that a number holds only rounded (`9007199254740993`, which JSON.parse reads as
 *   9007199254740992), or that JavaScript writes otherwise, as the body parser marks it (`InexactInteger`):
 *   clients whose integers are exact (Python's) send ids of that size, and two records would silently become one;
 * - a string, value or key, that is not well-formed Unicode (an unpaired surrogate, `"\ud800"`): SQLite and BSON
 *   store it as U+FFFD, so that two different ids or emails would become one;
 * - a key holding U+0000, or the key `_bsontype`: BSON cannot write either (a key ends at its first zero byte, and
 *   `_bsontype` marks an object as one of BSON's own types), so that on MongoDB the import keeping the item in its
 *   details would fail, and every call it joined with it. Refused on every store, so that a body one accepts the
 *   other does too.
 */
export function unstorablePart(body: unknown, depthLimit = MAX_JSON_DEPTH): UnstorablePart | null {
  const leafProblem = problemOfLeaf(body)
  if (leafProblem) return { path: [], problem: leafProblem }
  if (typeof body !== 'object' || body === null) return null
  // Depth first, in document order, on a stack of its own (a hostile body cannot overflow the call stack): every
  // container gets one frame, linked to its parent's, and a path is made only for the part reported. A body of ten
  // million empty arrays is walked in about a second.
  let frame: Frame | null = frameOf(body as object, 1, null, null)
  if (frame.depth > depthLimit) return tooDeep(frame, depthLimit)
  while (frame) {
    if (frame.next === frame.count) {
      frame = frame.parent
      continue
    }
    const key = frame.keys ? frame.keys[frame.next] : frame.next
    frame.next++
    const keyProblem = typeof key === 'string' ? problemOfKey(key) : null
    if (keyProblem) return { path: pathOf(frame), problem: keyProblem }
    const child: unknown = (frame.value as Record<string | number, unknown>)[key]
    if (typeof child === 'object' && child !== null && !(child instanceof InexactInteger)) {
      frame = frameOf(child, frame.depth + 1, frame, key)
      if (frame.depth > depthLimit) return tooDeep(frame, depthLimit)
    } else {
      const problem = problemOfLeaf(child)
      if (problem) return { path: [...pathOf(frame), key], problem }
    }
  }
  return null
}

/** A container being walked: its keys (an object's) or its length (an array's), and the next to visit. */
interface Frame {
  value: object
  keys: string[] | null
  count: number
  next: number
  depth: number
  parent: Frame | null
  /** Its key in its parent. */
  key: string | number | null
}

function frameOf(value: object, depth: number, parent: Frame | null, key: string | number | null): Frame {
  const keys = Array.isArray(value) ? null : Object.keys(value)
  return { value, keys, count: keys ? keys.length : (value as unknown[]).length, next: 0, depth, parent, key }
}

/** The keys and indexes from the body down to the container of `frame`. */
function pathOf(frame: Frame): (string | number)[] {
  const path: (string | number)[] = []
  for (let at: Frame | null = frame; at?.parent; at = at.parent) path.push(at.key!)
  return path.toReversed()
}

const tooDeep = (frame: Frame, depthLimit: number): UnstorablePart => ({
  path: pathOf(frame),
  problem: `nested more than ${depthLimit} levels deep: the limit is ${depthLimit}`,
})

const MALFORMED_TEXT = 'text that is not well-formed Unicode (an unpaired surrogate such as \\ud800)'

function problemOfKey(key: string): string | null {
  if (!key.isWellFormed()) return MALFORMED_TEXT
  if (key === '_bsontype' || key.includes('\u0000')) return 'a key that cannot be stored (`_bsontype`, or one holding U+0000)'
  return null
}

function problemOfLeaf(value: unknown): string | null {
  if (value instanceof InexactInteger) {
    return `an integer past 2^53 that a number holds only as ${Number(value.source)} (${value.source}): send it as a string`
  }
  if (typeof value === 'number') return Number.isFinite(value) ? null : 'a number too large to be stored'
  if (typeof value === 'string') return value.isWellFormed() ? null : MALFORMED_TEXT
  return null
}

/**
 * Refuses, on every route, a JSON body that could not be stored as sent (`unstorablePart`), naming the item it is
 * in: before anything is stored, as nothing acknowledged may then be lost or changed.
 */
export function refuseUnstorableJson(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    const refusal = unstorableJsonRefusal(request.body)
    if (refusal) throw refusal
  })
}

/** The refusal of a JSON document that could not be stored as sent (`unstorablePart`), naming the item it is in; or null. */
export function unstorableJsonRefusal(document: unknown): ValidationError | null {
  const part = unstorablePart(document)
  if (!part) return null
  const { path, problem } = part
  // The resource is the document's top-level field (`body` for an array body, or the body itself), as for any other body error.
  const resource = Array.isArray(document) || path.length === 0 ? 'body' : String(path[0])
  const shown = path.slice(0, 4).join('/') + (path.length > 4 ? '/…' : '')
  return new ValidationError({ resource, description: `${problem}, at /${shown}` })
}
