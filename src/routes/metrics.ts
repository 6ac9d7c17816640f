import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import type { Counter } from 'prom-client'
import { QueueFullError, ReadQueueFullError } from '../errors.ts'
import { ServiceMetrics } from '../observability/metrics.ts'
import { SERVICE_VERSION } from '../version.ts'
import { injectedFaultOf } from './test-kit.ts'

declare module 'fastify' {
  interface FastifyInstance {
    metrics: ServiceMetrics
  }
}

/** The documentation page and its assets are one label: operators watch the API, not each file of the page. */
const DOCUMENTATION = '/docs/*'

/** The `route` label of a request: its route template (never the raw URL, whose ids would make a series each). */
function routeLabel(template: string | undefined): string {
  if (template === undefined) return 'unmatched'
  return template === '/docs' || template.startsWith('/docs/') ? DOCUMENTATION : template
}

/**
 * Counts and times every answered request by route label, and serves `GET /metrics` in the Prometheus text
 * format (`text/plain; version=0.0.4`), without a key: the service's metrics and the process's defaults.
 */
export function registerMetrics(app: FastifyInstance): void {
  const metrics = new ServiceMetrics({
    imports: app.store.importStatistics,
    clock: app.clock,
    build: { version: SERVICE_VERSION, store: app.store.kind },
  })
  app.decorate('metrics', metrics)

  // A 429 is the rate limit's unless it refused an upsert because its company's import queue was full, or a read
  // because too many of its company's reads waited for their turn.
  const refusedForQueue = new WeakMap<object, Counter>()
  app.addHook('onError', async (request, _reply, error) => {
    if (error instanceof QueueFullError) refusedForQueue.set(request, metrics.importQueueFull)
    else if (error instanceof ReadQueueFullError) refusedForQueue.set(request, metrics.readQueueFull)
  })

  app.addHook('onResponse', async (request, reply) => {
    metrics.countAnswer(request.method, routeLabel(request.routeOptions.url), reply.statusCode, reply.elapsedTime / 1000)
    // An injected 429 is counted with the faults, not as a refusal of the service's own.
    if (reply.statusCode === 429 && !injectedFaultOf(request)) (refusedForQueue.get(request) ?? metrics.rateLimited).inc()
  })

  app.get(
    '/metrics',
    {
      schema: {
        summary: 'Prometheus metrics: requests, latency, 429s, imports, build, process',
        operationId: 'getMetrics',
        description: 'The Prometheus text exposition format (not JSON). No key.',
        produces: ['text/plain'],
        tags: ['operations'],
        response: {
          200: {
            description: 'The Prometheus text exposition format, version 0.0.4',
            content: { 'text/plain; version=0.0.4; charset=utf-8': { schema: Type.String() } },
          },
        },
      },
    },
    async (_request, reply) => {
      reply.type(metrics.contentType)
      return metrics.exposition()
    },
  )
}
