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
 * - a string, value or key, that is not well-formed Unicode (an unpaired surrogate, `"\ud800"`): SQLite and BSON
 *   store it as U+FFFD, so that two different ids or emails would become one.
 */
export function unstorablePart(body: unknown, depthLimit = MAX_JSON_DEPTH): UnstorablePart | null {
  // Iterative, so that walking a hostile body cannot overflow the stack either.
  const leafProblem = problemOfLeaf(body)
  if (leafProblem) return { path: [], problem: leafProblem }
  const pending: { value: unknown; depth: number; path: (string | number)[] }[] = [{ value: body, depth: 1, path: [] }]
  while (pending.length > 0) {
    const { value, depth, path } = pending.pop()!
    if (typeof value !== 'object' || value === null) continue
    if (depth > depthLimit) {
      return { path, problem: `nested more than ${depthLimit} levels deep: the limit is ${depthLimit}` }
    }
    const keys: (string | number)[] = Array.isArray(value) ? [] : Object.keys(value)
    const count = Array.isArray(value) ? value.length : keys.length
    // Objects are walked later, last to first, so that the first offending item is the one reported; a leaf is
    // checked at once (without a path of its own, as a body holds many).
    const objects: { value: unknown; depth: number; path: (string | number)[] }[] = []
    for (let index = 0; index < count; index++) {
      const key = Array.isArray(value) ? index : keys[index]
      if (typeof key === 'string' && !key.isWellFormed()) return { path, problem: MALFORMED_TEXT }
      const child: unknown = (value as Record<string | number, unknown>)[key]
      if (typeof child === 'object' && child !== null) objects.push({ value: child, depth: depth + 1, path: [...path, key] })
      else {
        const problem = problemOfLeaf(child)
        if (problem) return { path: [...path, key], problem }
      }
    }
    for (let index = objects.length - 1; index >= 0; index--) pending.push(objects[index])
  }
  return null
}

const MALFORMED_TEXT = 'text that is not well-formed Unicode (an unpaired surrogate such as \\ud800)'

function problemOfLeaf(value: unknown): string | null {
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
    const part = unstorablePart(request.body)
    if (!part) return
    const { path, problem } = part
    // The resource is the body's top-level field (`body` for an array body, or the body itself), as for any other body error.
    const resource = Array.isArray(request.body) || path.length === 0 ? 'body' : String(path[0])
    const shown = path.slice(0, 4).join('/') + (path.length > 4 ? '/…' : '')
    throw new ValidationError({ resource, description: `${problem}, at /${shown}` })
  })
}
