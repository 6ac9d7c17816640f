import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
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

  app.addHook('onResponse', async (request, reply) => {
    const labels = {
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status_code: String(reply.statusCode),
    }
    metrics.requests.inc(labels)
    metrics.latency.observe(labels, reply.elapsedTime / 1000)
    if (reply.statusCode === 429) metrics.rateLimited.inc()
  })

  app.get(
    '/metrics',
    {
      schema: {
        summary: 'Prometheus metrics: requests, latency, 429s, imports',
        operationId: 'getMetrics',
        description: 'The Prometheus text exposition format (not JSON). No key.',
        produces: ['text/plain'],
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
