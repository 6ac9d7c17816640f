import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { FieldSchema } from '../../v2/field-schema.ts'
import { FieldSchemaSchema } from '../../v2/schemas.ts'
import { fieldSchemaOf } from '../../v2/fields.ts'
import { VersionedAnswers } from '../../reporting/versioned-answers.ts'
import { AuthenticatedErrorResponses } from '../schemas.ts'

export const fieldRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const schemas = new VersionedAnswers<FieldSchema>()
  app.get(
    '/data-structures/:table_id/fields',
    {
      schema: {
        summary: 'The field schema of a live reporting structure or quota',
        operationId: 'getFields',
        description:
          'The fields of the rows, keyed by `api_key`, and the `schema_hash` that changes when a field is added, removed or modified, or a quota type changes. A sandbox or unknown id is 404.',
        params: Type.Object({ table_id: Type.String({ description: 'id of a reporting structure or of a quota, from discovery' }) }),
        response: { 200: FieldSchemaSchema, ...AuthenticatedErrorResponses },
      },
    },
    async (request) => {
      const companyId = request.principal.company.id
      const id = request.params.table_id
      return schemas.answer(app.store, `${companyId} ${id}`, () => fieldSchemaOf(app.store, companyId, id))
    },
  )
}
