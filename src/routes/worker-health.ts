import Fastify from 'fastify'
import type { Clock } from '../clock.ts'
import type { Config } from '../config.ts'
import type { RunningWorker } from '../imports/worker-process.ts'
import { loggerOptions } from '../logger.ts'
import { listeningUrl } from './base-url.ts'
import { registerErrorHandling } from './errors.ts'
import { registerHealth } from './health.ts'
import { registerMetrics } from './metrics.ts'

/**
 * `serve --role worker` with `WORKER_HEALTH_PORT`: a small HTTP listener beside the worker, with the probes of
 * an API instance (`/health/live`, `/health/ready` and their aliases: ready while the store answers and the
 * worker runs) and `/metrics` (the durations of the imports this worker finishes, the shared queue, the
 * process). Nothing else: no v1, v2 or admin route. Returns the worker with a `close()` that closes the
 * listener first (readiness turns 503), then the worker and the store, and the listener's address.
 */
export async function serveWorkerHealth(running: RunningWorker, config: Config, clock: Clock): Promise<{ served: RunningWorker; url: string }> {
  const app = Fastify({ logger: loggerOptions(config.logLevel), disableRequestLogging: true })
  app.decorate('config', config)
  app.decorate('store', running.store)
  app.decorate('clock', clock)
  registerErrorHandling(app)
  registerMetrics(app)
  registerHealth(app, running.worker)
  app.metrics.watchWorker(running.worker)
  try {
    await app.listen({ port: config.workerHealthPort ?? 0, host: config.host })
  } catch (error) {
    await running.close()
    throw error
  }
  let closing: Promise<void> | null = null
  const served = {
    ...running,
    close() {
      closing ??= app.close().then(() => running.close())
      return closing
    },
  }
  return { served, url: listeningUrl(app, config.host) }
}
