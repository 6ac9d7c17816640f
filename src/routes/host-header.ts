import { isIPv6 } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { ValidationError } from '../errors.ts'

/** A DNS name (labels of letters, digits, `-` and `_`) or an IPv4 address, then an optional port. */
const NAME_AND_PORT =
  /^(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?(?::(\d{1,5}))?$/
const BRACKETED_IPV6_AND_PORT = /^\[([0-9A-Fa-f:.]+)\](?::(\d{1,5}))?$/

/** True for `host[:port]` as a Host header may carry it: a name, an IPv4 address or a bracketed IPv6 address. */
export function isValidHost(host: string): boolean {
  // Every request of a client names the same host: the last valid one is not parsed again.
  if (host === lastValidHost) return true
  if (host.length > 261) return false
  const ipv6 = BRACKETED_IPV6_AND_PORT.exec(host)
  const named = ipv6 ? null : NAME_AND_PORT.exec(host)
  if (ipv6 ? !isIPv6(ipv6[1]) : !named) return false
  const port = ipv6 ? ipv6[2] : named?.[1]
  if (port !== undefined && Number(port) > 65535) return false
  lastValidHost = host
  return true
}

let lastValidHost: string | null = null

const WEB_SCHEMES = new Set(['http', 'https'])

/**
 * Refuses a request whose host (its Host header, or X-Forwarded-Host from a trusted proxy) is not a valid
 * `host[:port]`, or whose scheme from a trusted proxy is not http or https, before anything else runs: links the
 * service writes (`next`, `next_url`, `links`) are built from them when PUBLIC_URL is unset, and must never carry
 * what a hostile header put there.
 */
export function refuseInvalidHost(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    // An HTTP/1.0 request may have no Host at all (''): nothing hostile can come of that.
    const host = request.host
    if (host !== '' && !isValidHost(host)) {
      throw new ValidationError({ resource: 'Host', description: 'expected a host name or address, optionally with :port' })
    }
    if (host === '' && request.headers.host === undefined && request.raw.httpVersion !== '1.0') {
      throw new ValidationError({ resource: 'Host', description: 'an HTTP/1.1 request names its host (RFC 9112)' })
    }
    // Node keeps the first of several Host headers; a proxy may have read another (RFC 9112 asks for a 400).
    if (hostHeaders(request.raw.rawHeaders) > 1)
      throw new ValidationError({ resource: 'Host', description: 'one Host header, not several' })
    // The scheme of those links, from a trusted proxy's X-Forwarded-Proto (Fastify reads it only then), in any case.
    if (request.headers['x-forwarded-proto'] !== undefined && !WEB_SCHEMES.has(request.protocol.toLowerCase()))
      throw new ValidationError({ resource: 'X-Forwarded-Proto', description: 'expected http or https' })
  })
}

function hostHeaders(rawHeaders: readonly string[]): number {
  let count = 0
  for (let index = 0; index < rawHeaders.length; index += 2) {
    const name = rawHeaders[index]
    if (name.length === 4 && name.toLowerCase() === 'host') count++
  }
  return count
}
