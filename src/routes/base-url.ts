import type { FastifyRequest } from 'fastify'

/**
 * The absolute base of the URLs the service writes: PUBLIC_URL when set, else the scheme and host the request
 * came to (behind a trusted proxy, the ones it forwarded).
 */
export function baseUrl(request: FastifyRequest): string {
  return request.server.config.publicUrl ?? `${request.protocol}://${request.host}`
}
