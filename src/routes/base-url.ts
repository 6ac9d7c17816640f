import type { FastifyInstance, FastifyRequest } from 'fastify'

/**
 * The absolute base of the URLs the service writes: PUBLIC_URL when set, else the scheme and host the request
 * came to (behind a trusted proxy, the ones it forwarded); for a request that names no host (HTTP/1.0 may not),
 * the address and port its connection came to.
 */
export function baseUrl(request: FastifyRequest): string {
  return request.server.config.publicUrl ?? `${request.protocol.toLowerCase()}://${request.host || connectionHost(request)}`
}

function connectionHost(request: FastifyRequest): string {
  const { localAddress = '127.0.0.1', localPort } = request.raw.socket
  const address = localAddress.startsWith('::ffff:') ? localAddress.slice('::ffff:'.length) : localAddress
  return `${address.includes(':') ? `[${address}]` : address}:${localPort}`
}

/** The address a listening app answers on, for a start-up line: a wildcard host is shown as the loopback. */
export function listeningUrl(app: FastifyInstance, host: string): string {
  const address = app.server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host
  return `http://${shown.includes(':') ? `[${shown}]` : shown}:${port}`
}
