import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Store } from '../store/port.ts'
import type { Principal } from './api-keys.ts'
import { PrincipalCache } from './principal-cache.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The company, user and key of the request's X-API-Key. Set on every v1 and v2 route. */
    principal: Principal
  }
}

const outcomes = new WeakMap<FastifyRequest, Promise<Principal | Error>>()
const caches = new WeakMap<Store, PrincipalCache>()

function cacheOf(store: Store): PrincipalCache {
  let cache = caches.get(store)
  if (!cache) {
    cache = new PrincipalCache(store)
    caches.set(store, cache)
  }
  return cache
}

/**
 * The outcome of the request's `X-API-Key`: its principal, or the error that refuses it. Resolved once per
 * request, because the rate limiter (which counts per company) needs it before the auth hook rejects, and
 * reused across requests for a moment (`PrincipalCache`).
 */
export function authenticationOf(request: FastifyRequest): Promise<Principal | Error> {
  let outcome = outcomes.get(request)
  if (!outcome) {
    const header = request.headers['x-api-key']
    outcome = cacheOf(request.server.store)
      .authenticate(Array.isArray(header) ? header[0] : header)
      .catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))))
    outcomes.set(request, outcome)
  }
  return outcome
}

/**
 * Requires a valid `X-API-Key` header on every route of the instance it is added to (the v1 and v2 trees).
 * A key in the query string is never read.
 */
export function requireApiKey(app: FastifyInstance): void {
  app.decorateRequest('principal', null as unknown as Principal)
  app.addHook('onRequest', async (request) => {
    const outcome = await authenticationOf(request)
    if (outcome instanceof Error) throw outcome
    request.principal = outcome
  })
}
