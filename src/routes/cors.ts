import fastifyCors from '@fastify/cors'
import type { FastifyInstance } from 'fastify'

/** What a browser may send besides the simple headers: the key, a JSON body, a request id, an admin token. */
const ALLOWED_HEADERS = ['X-API-Key', 'Content-Type', 'X-Request-Id', 'Authorization']

/** What a browser script may read of an answer besides the simple headers. */
const EXPOSED_HEADERS = ['X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After', 'Deprecation', 'Link']

/**
 * CORS for the origins of `CORS_ORIGINS` (`*`: any), so that a browser-based tool can call the service during
 * development. Register before the routes: its `onRequest` hook then answers preflights (`OPTIONS`, outside the
 * rate limit and the key check) and adds the headers to every answer, errors included.
 */
export async function registerCors(app: FastifyInstance, origins: readonly string[]): Promise<void> {
  await app.register(fastifyCors, {
    origin: origins.includes('*') ? '*' : [...origins],
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: 600,
    // The plugin's own answer to an OPTIONS without Origin is a plain-text 400; a 204 says nothing false.
    strictPreflight: false,
  })
}
