import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { enqueueImport } from '../../imports/enqueue.ts'
import { MAX_ATTRIBUTIONS_PER_CALL, smallCallBodyLimit } from '../../imports/limits.ts'
import { AuthenticatedErrorResponses } from '../schemas.ts'
import { admitUpsert, bodyBytes, resendKeys } from './import-admission.ts'
import { AttributionReceiptSchema, bulkBodySchema, DATA_BODY } from './import-schemas.ts'

const ATTRIBUTIONS = [
  {
    target: 'managers',
    operationId: 'upsertManagers',
    description:
      "Each item gives a user's manager (by email) over months; its own import, separate from users and groups, all or nothing per call. The users must exist.",
    summary: "Set users' managers over months (asynchronous import, all or nothing)",
    items:
      'Items {user: email, manager: email or null, start_date: YYYY-MM or null/absent (from the beginning), end_date: YYYY-MM or null (open)}; one item per user',
  },
  {
    target: 'groups',
    operationId: 'upsertGroups',
    description:
      "Each item gives a user's group in a group dimension over months; its own import, separate from users and managers, all or nothing per call. The users must exist.",
    summary: "Set users' groups over months (asynchronous import, all or nothing)",
    items:
      'Items {user: email, group_dimension, group, start_date: YYYY-MM or null/absent (from the beginning), end_date: YYYY-MM or null (open)}',
  },
] as const

/** `PUT /v1/users/managers/bulk` and `PUT /v1/users/groups/bulk`: each call is its own asynchronous import. */
export const attributionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  for (const { target, summary, operationId, description, items } of ATTRIBUTIONS) {
    app.put(
      `/users/${target}/bulk`,
      {
        preParsing: admitUpsert,
        bodyLimit: smallCallBodyLimit(app.config.bodyLimitMb),
        config: DATA_BODY,
        schema: {
          summary,
          operationId,
          description,
          body: bulkBodySchema(MAX_ATTRIBUTIONS_PER_CALL, items),
          response: { 200: AttributionReceiptSchema, ...AuthenticatedErrorResponses },
        },
      },
      async (request) => {
        const { data } = request.body
        const receipt = await enqueueImport(app.store, app.clock, {
          company: request.principal.company,
          target,
          items: data,
          bytes: bodyBytes(request),
          queueLimitBytes: app.config.importQueueLimitBytes,
          resend: resendKeys(request),
        })
        return { ...receipt, count: data.length, data }
      },
    )
  }
}
