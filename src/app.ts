import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyInstance } from 'fastify'
import { requireApiKey } from './auth/api-key-hook.ts'
import { carriesSecret, secretsOf } from './auth/api-keys.ts'
import type { Clock } from './clock.ts'
import type { Config } from './config.ts'
import { logDestination, loggerOptions } from './logger.ts'
import { limitRequestRate } from './rate-limit/rate-limit.ts'
import { adminRoutes } from './routes/admin.ts'
import { followClockOfStore } from './routes/clock-sync.ts'
import { registerCompression } from './routes/compression.ts'
import { registerCors } from './routes/cors.ts'
import { continueWhenBodyIsRead, drainRefusedBodies } from './routes/refused-bodies.ts'
import { registerErrorHandling, schemaRefusal } from './routes/errors.ts'
import { answerOutsideRoutes, FRAMEWORK_REFUSALS } from './routes/framework-errors.ts'
import { OneLinePerRequest } from './routes/request-log.ts'
import { requestTimeouts } from './routes/request-timeouts.ts'
import { stopWithTheApp } from './routes/draining.ts'
import { shareReadsFairly } from './routes/fair-reads.ts'
import { registerHealth, type WorkerProbe } from './routes/health.ts'
import { refuseInvalidHost } from './routes/host-header.ts'
import { refuseUnstorableJson } from './routes/json-body.ts'
import { readJsonBodies } from './routes/json-parser.ts'
import { keepOutOfCaches } from './routes/no-store.ts'
import { registerMetrics } from './routes/metrics.ts'
import { registerOpenApi } from './routes/openapi.ts'
import { applyTestKit, registerTestKit } from './routes/test-kit.ts'
import { validatorsKeepingBodyTypes } from './routes/validators.ts'
import { v1Routes } from './routes/v1/index.ts'
import { v2Routes } from './routes/v2/index.ts'
import type { Store } from './store/port.ts'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
    store: Store
    clock: Clock
  }
}

export interface AppOptions {
  config: Config
  store: Store
  clock: Clock
  /** A pino destination for the logs (tests capture them); stdout when absent. */
  logStream?: NodeJS.WritableStream
  /** The import worker this instance runs, if any: readiness reports it. */
  worker?: WorkerProbe
}

const REQUEST_ID = /^[\w.:-]{1,128}$/

/**
 * Builds the HTTP application in tiers: infrastructure (config, store, clock, logging, errors), then the
 * route trees. The store's lifetime belongs to the caller.
 */
export async function buildApp({ config, store, clock, logStream, worker }: AppOptions): Promise<FastifyInstance> {
  const timeouts = requestTimeouts(config.requestTimeoutMs)
  const app = Fastify({
    logger: { ...loggerOptions(config.logLevel), stream: logStream ?? logDestination() },
    // genReqId reads X-Request-Id itself, so that an unusable value is replaced rather than trusted.
    requestIdHeader: false,
    logController: new OneLinePerRequest(),
    genReqId: (request) => {
      const incoming = request.headers['x-request-id']
      // An id is written on every log line and in the journal: one that carries a secret is not taken.
      const usable =
        typeof incoming === 'string' && REQUEST_ID.test(incoming) && !carriesSecret(incoming, secretsOf(request, config.adminToken))
      return usable ? incoming : randomUUID()
    },
    // Fastify takes a hop count at run time; its types only list the other forms.
    trustProxy: config.trustProxy as boolean | string[],
    bodyLimit: config.bodyLimitMb * 1024 * 1024,
    ...timeouts,
    // Node answers an HTTP/1.1 request without Host itself, with an empty 400: the host hook refuses it in the
    // specification's body instead.
    http: { ...timeouts.http, requireHostHeader: false },
    // A request that reaches a draining instance on an open connection is still answered (with Connection:
    // close), in the specification's bodies, rather than by the framework's own 503.
    return503OnClosing: false,
    // The framework's own refusals (bad percent-encoding, long parameter, malformed HTTP) in the specification's bodies.
    ...FRAMEWORK_REFUSALS,
    schemaErrorFormatter: schemaRefusal,
    ajv: { customOptions: { coerceTypes: 'array', allErrors: true, removeAdditional: false } },
    schemaController: { compilersFactory: { buildValidator: validatorsKeepingBodyTypes() } },
  })

  app.decorate('config', config)
  app.decorate('store', store)
  app.decorate('clock', clock)
  followClockOfStore(app)
  const answerNotFound = registerErrorHandling(app)
  drainRefusedBodies(app)
  continueWhenBodyIsRead(app)
  answerOutsideRoutes(app)
  if (config.corsOrigins.length > 0) await registerCors(app, config.corsOrigins)
  readJsonBodies(app)
  refuseUnstorableJson(app)
  refuseInvalidHost(app)
  await registerCompression(app)
  // The OpenAPI generator first: it sees only the routes registered after it.
  await registerOpenApi(app)
  registerMetrics(app)
  stopWithTheApp(app)
  registerHealth(app, worker)
  registerTestKit(app)

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id)
  })

  await app.register(async (api) => {
    keepOutOfCaches(api)
    await limitRequestRate(api)
    requireApiKey(api)
    applyTestKit(api)
    // After them all: a read takes its turn once counted, authenticated, validated and past the test kit's faults.
    shareReadsFairly(api)
    await api.register(v1Routes, { prefix: '/v1' })
    await api.register(v2Routes, { prefix: '/v2' })
    // A v1 or v2 path no route takes is answered inside `api`, after its hooks: it needs the key, counts against
    // the rate limit and carries its headers, and is written to the journal, as every v1 and v2 request is.
    for (const prefix of ['/v1', '/v2']) await api.register(async (version) => version.setNotFoundHandler(answerNotFound), { prefix })
  })
  if (config.adminToken) await app.register(adminRoutes, { prefix: '/admin', worker })

  return app
}
