import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { ValidationError } from '../../errors.ts'
import { enqueueImport, ImportReceiptSchema } from '../../imports/enqueue.ts'
import { MAX_RECORDS_PER_CALL } from '../../imports/limits.ts'
import { offsetPageSchema, OffsetQuerySchema, WalkPositions } from '../../v1/offset-page.ts'
import { listTableRecords, liveTableByKey, V1RecordSchema } from '../../v1/table-records.ts'
import { baseUrl } from '../base-url.ts'
import { AuthenticatedErrorResponses, ValidationErrorBodySchema } from '../schemas.ts'
import { admitUpsert, bodyBytes } from './import-admission.ts'
import { BooleanFlagSchema, DebounceSchema, flagValue } from './import-schemas.ts'

/** `GET /v1/tables/{data_table_key}/records`, and `POST …/records/bulk`: an asynchronous upsert of data-table records. */
export const tableRecordRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const positions = new WalkPositions()
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
      listTableRecords(app.store, request.principal.company.id, request.params.data_table_key, request.query, baseUrl(request), positions),
  )

  app.post(
    '/tables/:data_table_key/records/bulk',
    {
      preParsing: admitUpsert,
      // Ajv would wrap a lone scalar into a one-item array: a body that is not an array is malformed.
      preValidation: async (request) => {
        if (!Array.isArray(request.body)) throw new ValidationError({ resource: 'body', description: 'expected a JSON array of records' })
      },
      schema: {
        summary: 'Create, update or delete records of a data table (asynchronous import)',
        operationId: 'upsertTableRecords',
        description:
          'Upserts records by their id field (`deleted: true` removes one); a bad record is skipped and reported in the import. `all=true` empties the table first; calls within a `debounce` window join one import.',
        params: Type.Object({ data_table_key: Type.String() }),
        querystring: Type.Object({
          all: Type.Optional(BooleanFlagSchema('Delete all the content of the table before the import')),
          debounce: Type.Optional(DebounceSchema),
          keep_overrides: Type.Optional(BooleanFlagSchema('Keep the manual overrides made in the table (also across all=true)')),
        }),
        // Each record is checked when the import runs: a bad one is skipped and reported, not a 400.
        body: Type.Array(Type.Unknown(), {
          maxItems: MAX_RECORDS_PER_CALL,
          description: "Records keyed by the table's field API keys; deleted: true removes one",
        }),
        response: { 200: ImportReceiptSchema, ...AuthenticatedErrorResponses, 413: ValidationErrorBodySchema },
      },
    },
    async (request) => {
      const { company } = request.principal
      const table = await liveTableByKey(app.store, company.id, request.params.data_table_key)
      return enqueueImport(app.store, app.clock, {
        company,
        target: 'records',
        table,
        items: request.body,
        bytes: bodyBytes(request),
        queueLimitBytes: app.config.importQueueLimitBytes,
        debounceSeconds: request.query.debounce,
        all: flagValue(request.query.all),
        keepOverrides: flagValue(request.query.keep_overrides),
      })
    },
  )
}
