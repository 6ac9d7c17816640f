import type { FastifyInstance } from 'fastify'

/**
 * Every answer of the instance it is added to, refusals included, tells caches along the way (a proxy, a CDN, a
 * browser) to keep nothing: what a key or the admin token reads is one company's data, and admin answers carry
 * API keys. Added first, so that an answer refused by a later hook carries it too.
 */
export function keepOutOfCaches(app: FastifyInstance): void {
  app.addHook('onRequest', (_request, reply, done) => {
    reply.header('cache-control', 'no-store')
    done()
  })
}
