import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { listTableRecords } from '../../v1/table-records.ts'
import { baseUrl } from '../base-url.ts'
import { AuthenticatedErrorResponses } from '../schemas.ts'
import { OffsetQuerySchema, offsetPageSchema } from './offset-schemas.ts'

/**
 * A data-table record: its keys are the table's field API keys (an amount field `f` with `f_currency` beside
 * it, a multi-valued field as one `;`-separated string, dates YYYY-MM-DD, date-times ISO 8601).
 */
export const V1RecordSchema = Type.Object({}, { additionalProperties: true })

/** `GET /v1/tables/{data_table_key}/records`. The bulk upsert lives in its own plugin. */
export const tableRecordReadRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/tables/:data_table_key/records',
    {
      schema: {
        summary: 'List the records of a data table',
        operationId: 'listTableRecords',
        description:
          'The records of a live data table, each configured field under its API key, manual overrides applied. An unknown or sandbox key is 404.',
        params: Type.Object({ data_table_key: Type.String({ description: 'The table API name' }) }),
        querystring: OffsetQuerySchema,
        response: { 200: offsetPageSchema(V1RecordSchema), ...AuthenticatedErrorResponses },
      },
    },
    async (request) =>
      listTableRecords(app.store, request.principal.company.id, request.params.data_table_key, request.query, baseUrl(request)),
  )
}
