import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { originFormPath, recordRoutes } from './route-table.ts'

/** A route path as a pattern over concrete paths: `:param` is one segment, `*` anything. */
function pathPattern(url: string): RegExp {
  const segments = url.split('/').map((segment) => {
    if (segment === '*') return '.*'
    if (segment.startsWith(':')) return '[^/]+'
    return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  })
  // Exactly the path, as the router matches it: `/v2/data-structures/` is another path, unknown (404) to every method.
  return new RegExp(`^${segments.join('/')}$`)
}

/**
 * Tells a wrong method on a known path (405, with `Allow`) from an unknown path (404), by the routes registered
 * after this is called (`recordRoutes`). Fastify itself answers both with a 404.
 */
export function trackRouteMethods(app: FastifyInstance): (request: FastifyRequest, reply: FastifyReply) => boolean {
  const routes = recordRoutes(app)
  const patterns = new Map<string, RegExp>()
  const patternOf = (path: string) => patterns.get(path) ?? patterns.set(path, pathPattern(path)).get(path)!

  /** Answers 405 when the path is a route's under other methods; false (nothing sent) otherwise. */
  return (request, reply) => {
    const path = originFormPath(request.url)
    const routed = decodedAsRouted(path)
    const allowed = new Set(routes.filter((route) => patternOf(route.path).test(routed)).flatMap((route) => route.methods))
    if (allowed.size === 0 || allowed.has(request.method)) return false
    const allow = [...allowed].toSorted().join(', ')
    reply
      .code(405)
      .header('allow', allow)
      .send({
        message: `Method ${request.method} is not allowed on ${path}; allowed: ${allow}`,
        resource: 'method',
        type: 'MethodNotAllowedError',
      })
    return true
  }
}

/**
 * The path as the router matches it: percent-encoded characters decoded, except those that delimit a path
 * (`%2F` stays, as in the router), so that `/%762/data-structures` is the known path it routes to.
 */
function decodedAsRouted(path: string): string {
  if (!path.includes('%')) return path
  try {
    return decodeURI(path)
  } catch {
    return path
  }
}
