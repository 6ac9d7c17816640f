import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { enqueueImport } from '../../imports/enqueue.ts'
import { MAX_ATTRIBUTIONS_PER_CALL } from '../../imports/limits.ts'
import { AuthenticatedErrorResponses } from '../schemas.ts'
import { admitUpsert, bodyBytes } from './import-admission.ts'
import { bulkBodySchema, ImportReceiptSchema } from './import-schemas.ts'

const ATTRIBUTIONS = [
  {
    target: 'managers',
    summary: "Set users' managers over months (asynchronous import, all or nothing)",
    items: 'Items {user: email, manager: email or null, start_date: YYYY-MM, end_date: YYYY-MM or null (open)}',
  },
  {
    target: 'groups',
    summary: "Set users' groups over months (asynchronous import, all or nothing)",
    items: 'Items {user: email, group_dimension, group, start_date: YYYY-MM, end_date: YYYY-MM or null (open)}',
  },
] as const

/** `PUT /v1/users/managers/bulk` and `PUT /v1/users/groups/bulk`: each call is its own asynchronous import. */
export const attributionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  for (const { target, summary, items } of ATTRIBUTIONS) {
    app.put(
      `/users/${target}/bulk`,
      {
        preParsing: admitUpsert,
        schema: {
          summary,
          body: bulkBodySchema(MAX_ATTRIBUTIONS_PER_CALL, items),
          response: { 200: ImportReceiptSchema, ...AuthenticatedErrorResponses },
        },
      },
      async (request) =>
        enqueueImport(app.store, app.clock, {
          company: request.principal.company,
          target,
          items: request.body.data,
          bytes: bodyBytes(request),
          queueLimitBytes: app.config.importQueueLimitBytes,
        }),
    )
  }
}
