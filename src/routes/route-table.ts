import type { FastifyInstance } from 'fastify'

declare module 'fastify' {
  interface FastifyInstance {
    /** The routes registered since `recordRoutes`, with their methods. */
    knownRoutes: readonly KnownRoute[]
  }
}

/** A route as the router has it: its path (a `:name` segment is one parameter) and its methods. */
export interface KnownRoute {
  path: string
  methods: string[]
}

/**
 * Every route registered after this is called, with its methods, as one list that the app keeps (`knownRoutes`):
 * what tells a wrong method from an unknown path (405), and which paths a fault may name.
 */
export function recordRoutes(app: FastifyInstance): readonly KnownRoute[] {
  const routes: KnownRoute[] = []
  app.addHook('onRoute', (route) => {
    const path = route.url ?? route.path
    // A catch-all (CORS's `OPTIONS *`, for preflights) names no path: with it, every unknown path was a 405.
    if (path === '*' || path === '/*') return
    routes.push({ path, methods: [route.method].flat() })
  })
  app.decorate('knownRoutes', routes)
  return routes
}

/**
 * The path of a request's target in origin form: a target in absolute form (`GET http://host/v1/users`, which a
 * client may send and the router serves) without its scheme and authority, and without the query, nor a fragment,
 * which the router also ends a path at (`/v1/users#x` is served as `/v1/users`).
 */
export const originFormPath = (url: string): string => url.split(/[?#]/)[0].replace(/^[a-z][a-z\d+.-]*:\/\/[^/]*/i, '')
