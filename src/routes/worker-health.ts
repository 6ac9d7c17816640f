import Fastify, { type FastifyInstance, LogController } from 'fastify'
import type { Clock } from '../clock.ts'
import type { Config } from '../config.ts'
import type { ImportWorker } from '../imports/worker.ts'
import { loggerOptions } from '../logger.ts'
import type { Store } from '../store/port.ts'
import { registerErrorHandling } from './errors.ts'
import { followClockOfStore } from './clock-sync.ts'
import { answerOutsideRoutes, FRAMEWORK_REFUSALS } from './framework-errors.ts'
import { refuseInvalidHost } from './host-header.ts'
import { stopWithTheApp } from './draining.ts'
import { registerHealth } from './health.ts'
import { registerMetrics } from './metrics.ts'
import { requestTimeouts } from './request-timeouts.ts'

export interface WorkerHealthParts {
  config: Config
  store: Store
  clock: Clock
  worker: ImportWorker
}

/**
 * `serve --role worker` with `WORKER_HEALTH_PORT`: a small HTTP application beside the worker, with the probes of
 * an API instance (`/health/live`, `/health/ready` and their aliases: ready while the store answers and the
 * worker runs) and `/metrics` (the durations of the imports this worker finishes, the shared queue, the process).
 * Nothing else: no v1, v2 or admin route. The composition root (`src/server.ts`) listens and closes it.
 */
export function buildWorkerHealth({ config, store, clock, worker }: WorkerHealthParts): FastifyInstance {
  const timeouts = requestTimeouts(config.requestTimeoutMs)
  const app = Fastify({
    logger: loggerOptions(config.logLevel),
    logController: new LogController({ disableRequestLogging: true }),
    // A probe that reaches a stopping worker is answered by the readiness route (503, shutting_down), as on an API
    // instance, rather than by the framework's own 503.
    return503OnClosing: false,
    // As on an API instance: a probe sent slowly cannot hold its connection for good (Fastify's default is none).
    ...timeouts,
    // As on an API instance: malformed HTTP, a request without Host, an unknown Expect are refused in the
    // specification's bodies and with the service's time, not Node's or Fastify's.
    http: { ...timeouts.http, requireHostHeader: false },
    ...FRAMEWORK_REFUSALS,
  })
  app.decorate('config', config)
  app.decorate('store', store)
  app.decorate('clock', clock)
  followClockOfStore(app)
  registerErrorHandling(app)
  answerOutsideRoutes(app, 'GET, HEAD')
  refuseInvalidHost(app)
  registerMetrics(app)
  stopWithTheApp(app)
  registerHealth(app, worker)
  app.metrics.watchWorker(worker)
  return app
}
