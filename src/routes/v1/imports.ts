import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { getImportView } from '../../imports/import-view.ts'
import { AuthenticatedErrorResponses } from '../schemas.ts'
import { ImportAnswerSchema } from './import-schemas.ts'

/** `GET /v1/imports/{import_id}`: where an asynchronous upsert stands, and how it ended. */
export const importRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/imports/:import_id',
    {
      schema: {
        summary: 'Read an import of the company',
        operationId: 'getImport',
        description:
          'Where an asynchronous upsert stands (`scheduled`, `started`, `finished`) and, once finished, its outcome: `error`, and per call `data_tables_details[].error` (`ValidationError` or `PartialFailure`).',
        params: Type.Object({ import_id: Type.String({ description: 'The import_id an upsert answered' }) }),
        response: { 200: ImportAnswerSchema, ...AuthenticatedErrorResponses },
      },
    },
    async (request) => ({ data_import: await getImportView(app.store, request.principal.company.id, request.params.import_id) }),
  )
}
