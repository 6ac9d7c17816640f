import type { FastifyInstance } from 'fastify'
import { authenticate, type Principal } from './api-keys.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The company, user and key of the request's X-API-Key. Set on every v1 and v2 route. */
    principal: Principal
  }
}

/**
 * Requires a valid `X-API-Key` header on every route of the instance it is added to (the v1 and v2 trees).
 * A key in the query string is never read.
 */
export function requireApiKey(app: FastifyInstance): void {
  app.decorateRequest('principal', null as unknown as Principal)
  app.addHook('onRequest', async (request) => {
    const header = request.headers['x-api-key']
    request.principal = await authenticate(app.store, Array.isArray(header) ? header[0] : header)
  })
}
