import type { IncomingMessage, ServerResponse } from 'node:http'
import { Server } from 'node:net'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'

/** The API instances that are stopping: draining (SHUTDOWN_DRAIN_MS), or closing. */
const stopping = new WeakSet<FastifyInstance>()

/** How often a drain looks whether every connection has ended. */
const DRAIN_POLL_MS = 50

/** True once the instance has started to stop: readiness then answers 503. */
export const isStopping = (app: FastifyInstance): boolean => stopping.has(app)

/** Marks the instance as stopping as soon as its `close()` starts, before the requests in flight are waited for. */
export function markStoppingOnClose(app: FastifyInstance): void {
  app.addHook('preClose', async () => {
    stopping.add(app)
  })
}

/**
 * The first step of a graceful stop behind a load balancer (SHUTDOWN_DRAIN_MS, docs/deployment.md). The listener
 * closes, so that a balancer's new connections are refused, which it retries on another instance, whatever the
 * method. The connections already open stay: a request on one is answered, and the connection closed after it;
 * an idle one is left for the balancer to close (nginx's upstream `keepalive_timeout`). Closing an idle pooled
 * connection from this side races with a request the balancer sends on it at that moment: nginx does not send a
 * POST again, and answers it 503. Resolves once no connection is open, or after `ms`, with how many still are.
 */
export async function drain(app: FastifyInstance, ms: number): Promise<{ open: number }> {
  stopping.add(app)
  // Before Fastify's own listener, so that the header is there whatever the route answers, and however soon.
  app.server.prependListener('request', closeConnectionAfterAnswer)
  // The listener alone: http.Server#close would also close every idle connection. Fastify's close() later finds
  // it closed, which it allows.
  Server.prototype.close.call(app.server)
  const deadline = performance.now() + ms
  for (;;) {
    const open = await openConnections(app)
    const left = deadline - performance.now()
    if (open === 0 || left <= 0) return { open }
    await sleep(Math.min(DRAIN_POLL_MS, left))
  }
}

function closeConnectionAfterAnswer(_request: IncomingMessage, response: ServerResponse): void {
  response.setHeader('connection', 'close')
}

const openConnections = (app: FastifyInstance) =>
  new Promise<number>((resolve, reject) => app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))))
