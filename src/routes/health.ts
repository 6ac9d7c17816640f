import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { type Static, Type } from 'typebox'
import { StoreUpgradedError } from '../store/port.ts'
import { isStopping } from './draining.ts'

/** What readiness needs to know of an import worker run by this instance. */
export interface WorkerProbe {
  isRunning(): boolean
  /** Has the worker look for runnable imports now (the controlled clock moved): `ImportWorker.wake`. */
  wake?(): void
}

/** A store that has not answered in this time is reported unreachable rather than left to hang the probe. */
const STORE_PROBE_TIMEOUT_MS = 2000

export const LivenessSchema = Type.Object({ status: Type.Literal('ok') })

export const ReadinessSchema = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('unavailable')]),
  checks: Type.Object({
    store: Type.Union([Type.Literal('ok'), Type.Literal('unreachable'), Type.Literal('upgraded')], {
      description: '`upgraded` when a newer version of the service has migrated the store: restart this instance on that version',
    }),
    worker: Type.Union([Type.Literal('ok'), Type.Literal('stopped'), Type.Literal('none')], {
      description: '`none` when this instance runs no import worker',
    }),
    shutting_down: Type.Boolean(),
  }),
})
export type Readiness = Static<typeof ReadinessSchema>

/**
 * `GET /health/live` (the process answers) and `GET /health/ready` (the store answers, the worker this
 * instance runs is alive, and the instance is not shutting down), also at `/healthz` and `/readyz`, the names
 * Kubernetes users expect. Neither needs a key or counts against the rate limit: they are registered outside
 * the v1 and v2 trees.
 */
export function registerHealth(app: FastifyInstance, worker?: WorkerProbe): void {
  // /healthz and /readyz are the Kubernetes names of the same probes.
  for (const url of ['/health/live', '/healthz']) {
    app.get(
      url,
      {
        schema: {
          summary: 'Liveness: the process answers',
          operationId: url === '/healthz' ? 'getLivenessKubernetes' : 'getLiveness',
          description: 'The liveness probe: 200 while the process answers. No key. /health/live and /healthz answer alike.',
          tags: ['operations'],
          response: { 200: LivenessSchema },
        },
      },
      async () => ({ status: 'ok' as const }),
    )
  }

  for (const url of ['/health/ready', '/readyz']) {
    app.get(
      url,
      {
        schema: {
          summary: 'Readiness: the store answers, the worker is alive, the instance is not shutting down',
          operationId: url === '/readyz' ? 'getReadinessKubernetes' : 'getReadiness',
          description:
            'The readiness probe: 200 when this instance can serve, 503 otherwise, with each check. No key. /health/ready and /readyz answer alike.',
          tags: ['operations'],
          response: { 200: ReadinessSchema, 503: ReadinessSchema },
        },
      },
      async (request, reply) => {
        const checks: Readiness['checks'] = {
          store: await storeCheck(app, request.log),
          worker: worker ? (worker.isRunning() ? 'ok' : 'stopped') : 'none',
          shutting_down: isStopping(app),
        }
        const ready = checks.store === 'ok' && checks.worker !== 'stopped' && !checks.shutting_down
        return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'unavailable', checks })
      },
    )
  }
}

async function storeCheck(app: FastifyInstance, log: FastifyBaseLogger): Promise<Readiness['checks']['store']> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error('store ping timed out')), STORE_PROBE_TIMEOUT_MS)
  })
  try {
    await Promise.race([app.store.ping(), timeout])
    return 'ok'
  } catch (error) {
    if (error instanceof StoreUpgradedError) {
      log.error({ err: error }, 'readiness: the store was upgraded by a newer version of the service')
      return 'upgraded'
    }
    log.warn({ err: error }, 'readiness: the store does not answer')
    return 'unreachable'
  } finally {
    clearTimeout(timer)
  }
}
