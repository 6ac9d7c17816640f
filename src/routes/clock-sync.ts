import type { FastifyInstance } from 'fastify'

/**
 * With a clock kept in the store (`CLOCK=controlled`), each request reads the clock before anything else: a move
 * of the clock answered by any process sharing the store is seen by every request that arrives after that answer,
 * whatever process receives it (one read of one value per request; the system clock needs none). The `Date`
 * header then tells the same time, so that a client taking the service's time from it (the typed client's
 * `syncSince`) agrees with the `modified_at` of what the service writes.
 */
export function followClockOfStore(app: FastifyInstance): void {
  const clock = app.clock
  const sync = clock.sync?.bind(clock)
  if (!sync) return
  app.addHook('onRequest', async (request) => {
    try {
      await sync()
    } catch (error) {
      // A probe must not fail for it: the last offset read stands, and a request that needs the store fails there.
      request.log.warn({ err: error }, 'the controlled clock could not be read: the last offset read is used')
    }
  })
  app.addHook('onSend', async (_request, reply) => {
    reply.header('date', clock.now().toUTCString())
  })
}
