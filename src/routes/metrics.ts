import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { QueueFullError } from '../errors.ts'
import { ServiceMetrics } from '../observability/metrics.ts'

declare module 'fastify' {
  interface FastifyInstance {
    metrics: ServiceMetrics
  }
}

/**
 * Counts and times every answered request by route template (never the raw URL, whose ids would make a
 * series per resource), and serves `GET /metrics` in the Prometheus text format, without a key.
 */
export function registerMetrics(app: FastifyInstance): void {
  const metrics = new ServiceMetrics(() => app.store.importStatistics.countByStatus())
  app.decorate('metrics', metrics)

  // A 429 is the rate limit's unless it refused an upsert because its company's import queue was full.
  const refusedForQueue = new WeakSet<object>()
  app.addHook('onError', async (request, _reply, error) => {
    if (error instanceof QueueFullError) refusedForQueue.add(request)
  })

  app.addHook('onResponse', async (request, reply) => {
    const labels = {
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status_code: String(reply.statusCode),
    }
    metrics.requests.inc(labels)
    metrics.latency.observe(labels, reply.elapsedTime / 1000)
    if (reply.statusCode === 429) (refusedForQueue.has(request) ? metrics.importQueueFull : metrics.rateLimited).inc()
  })

  app.get(
    '/metrics',
    {
      schema: {
        summary: 'Prometheus metrics: requests, latency, 429s, imports',
        tags: ['operations'],
        response: { 200: Type.String({ description: 'Prometheus text exposition format' }) },
      },
    },
    async (_request, reply) => {
      reply.type(metrics.registry.contentType)
      return metrics.registry.metrics()
    },
  )
}
