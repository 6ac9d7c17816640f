import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { enqueueImport } from '../../imports/enqueue.ts'
import { MAX_USERS_PER_CALL, smallCallBodyLimit } from '../../imports/limits.ts'
import { AuthenticatedErrorResponses } from '../schemas.ts'
import { admitUpsert, bodyBytes } from './import-admission.ts'
import { bulkBodySchema, DATA_BODY, DebounceSchema, ImportReceiptSchema } from './import-schemas.ts'

/** `PUT /v1/users/bulk`: an asynchronous upsert of users, matched by email. */
export const userWriteRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.put(
    '/users/bulk',
    {
      preParsing: admitUpsert,
      bodyLimit: smallCallBodyLimit(app.config.bodyLimitMb),
      config: DATA_BODY,
      schema: {
        summary: 'Create or update users (asynchronous import)',
        operationId: 'upsertUsers',
        description:
          'Matched by email, case-insensitively. 200 means the import was created, not applied: read it with `GET /v1/imports/{import_id}` until `status` is `finished`. All or nothing per call, except a repeated email, skipped and reported.',
        querystring: Type.Object({ debounce: Type.Optional(DebounceSchema) }),
        body: bulkBodySchema(
          MAX_USERS_PER_CALL,
          'Users: email (the matching key), name, role, currency, calculation_currency, country, code, arrival_date, junior, and custom attributes by API key',
        ),
        response: { 200: ImportReceiptSchema, ...AuthenticatedErrorResponses },
      },
    },
    async (request) =>
      enqueueImport(app.store, app.clock, {
        company: request.principal.company,
        target: 'users',
        items: request.body.data,
        bytes: bodyBytes(request),
        queueLimitBytes: app.config.importQueueLimitBytes,
        debounceSeconds: request.query.debounce,
      }),
  )
}
