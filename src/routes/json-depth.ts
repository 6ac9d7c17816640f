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

/** The path (keys and indexes) to the first value nested deeper than `limit` levels, or null when none is. */
export function tooDeepPath(value: unknown, limit = MAX_JSON_DEPTH): (string | number)[] | null {
  // Iterative, so that measuring a hostile body cannot overflow the stack either.
  const pending: { value: unknown; depth: number; path: (string | number)[] }[] = [{ value, depth: 1, path: [] }]
  while (pending.length > 0) {
    const { value: current, depth, path } = pending.pop()!
    if (typeof current !== 'object' || current === null) continue
    if (depth > limit) return path
    const keys: (string | number)[] = Array.isArray(current) ? [] : Object.keys(current)
    const count = Array.isArray(current) ? current.length : keys.length
    // Pushed last to first, so that the first offending item is the one reported.
    for (let index = count - 1; index >= 0; index--) {
      const key = Array.isArray(current) ? index : keys[index]
      const child: unknown = (current as Record<string | number, unknown>)[key]
      if (typeof child === 'object' && child !== null) pending.push({ value: child, depth: depth + 1, path: [...path, key] })
    }
  }
  return null
}

/** Refuses, on every route, a JSON body nested deeper than MAX_JSON_DEPTH, naming the item it is in. */
export function refuseDeepJson(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    const path = tooDeepPath(request.body)
    if (!path) return
    // The resource is the body's top-level field (`body` for an array body), as for any other body error.
    const resource = Array.isArray(request.body) ? 'body' : String(path[0])
    const shown = path.slice(0, 4).join('/') + (path.length > 4 ? '/…' : '')
    throw new ValidationError({
      resource,
      description: `nested more than ${MAX_JSON_DEPTH} levels deep at /${shown}: the limit is ${MAX_JSON_DEPTH}`,
    })
  })
}
