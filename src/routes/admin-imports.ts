import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import {
  AdminImportListSchema,
  DEFAULT_DRAIN_TIMEOUT_MS,
  drainImports,
  listImports,
  MAX_DRAIN_TIMEOUT_MS,
  MAX_LISTED_IMPORTS,
} from '../admin/imports.ts'
import { composeImportWorker } from '../imports/compose-worker.ts'
import type { ImportWorker } from '../imports/worker.ts'
import { IMPORT_STATUSES } from '../store/model.ts'
import { AdminErrorResponses, CompanyParamsSchema, missingBodyAsEmpty, NoBodySchema, ValidationErrorBodySchema } from './schemas.ts'

/**
 * A company's imports for tests (registered inside the admin plugin, behind its token): list them with their
 * details, and drain them, so that a test waits until everything it sent is applied.
 */
export const adminImportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // The drains' workers whose run is under way, which may outlast the drain's answer (past its timeout): stopped
  // when the app closes, before the store does, so that their imports are handed back rather than left to the lease.
  const draining = new Set<ImportWorker>()
  app.addHook('onClose', async () => {
    await Promise.all([...draining].map((worker) => worker.stop()))
  })

  app.get(
    '/companies/:id/imports',
    {
      schema: {
        summary: "The company's imports with their details, newest first",
        operationId: 'adminListImports',
        description: 'Each import as `GET /v1/imports/{import_id}` shows it, with `target`, `window_ends_at` and `attempts`.',
        params: CompanyParamsSchema,
        querystring: Type.Object({
          status: Type.Optional(Type.Enum([...IMPORT_STATUSES], { description: 'Only the imports in this status' })),
          limit: Type.Optional(
            Type.Integer({ minimum: 1, maximum: MAX_LISTED_IMPORTS, description: `At most this many (default ${MAX_LISTED_IMPORTS})` }),
          ),
        }),
        response: { 200: AdminImportListSchema, ...AdminErrorResponses },
      },
    },
    async (request) => listImports(app.store, request.params.id, request.query),
  )

  app.post(
    '/companies/:id/imports/drain',
    {
      schema: {
        summary: 'Run every pending import of the company now, and answer when none is left',
        operationId: 'adminDrainImports',
        description:
          'Closes every open debounce window of the company, runs its imports that are not finished (this process runs them, or waits for the worker running one), and answers when none is scheduled or running, with the imports it saw unfinished, as they finished, oldest first. Past `timeout_ms`: 408, and the imports go on.',
        params: CompanyParamsSchema,
        body: NoBodySchema,
        querystring: Type.Object({
          timeout_ms: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: MAX_DRAIN_TIMEOUT_MS,
              description: `How long to wait at most, in real milliseconds (default ${DEFAULT_DRAIN_TIMEOUT_MS})`,
            }),
          ),
        }),
        response: {
          200: AdminImportListSchema,
          ...AdminErrorResponses,
          408: ValidationErrorBodySchema,
        },
      },
      preValidation: missingBodyAsEmpty,
    },
    async (request) => {
      const worker = composeImportWorker({ store: app.store, clock: app.clock, config: app.config, logger: app.log })
      draining.add(worker)
      try {
        return await drainImports(app.store, app.clock, worker, request.params.id, request.query.timeout_ms ?? DEFAULT_DRAIN_TIMEOUT_MS, {
          onLateFailure: (error) => request.log.error({ err: error }, 'admin drain: its own run, going on past its answer, failed'),
        })
      } finally {
        void worker.idle().then(() => draining.delete(worker))
      }
    },
  )
}
