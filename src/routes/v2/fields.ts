import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { FieldSchema } from '../../v2/field-schema.ts'
import { fieldSchemaOf } from '../../v2/fields.ts'
import { VersionedAnswers } from '../../reporting/versioned-answers.ts'
import { AuthenticatedErrorResponses } from '../schemas.ts'

export const FieldDescriptorSchema = Type.Object({
  api_key: Type.String({ description: 'standard.*, custom.* or datatable.*: the key of the field in the rows' }),
  name: Type.String(),
  type: Type.Enum(['string', 'number', 'object', 'date']),
  format: Type.Union([
    Type.String({ description: 'enum, period, percentage, float, currency, user_reference, date, or null' }),
    Type.Null(),
  ]),
  origin: Type.Enum(['standard', 'custom', 'datatable']),
  created_at: Type.String(),
  currencies: Type.Union([Type.Array(Type.String()), Type.Null()]),
  enum_values: Type.Union([Type.Array(Type.String()), Type.Null()]),
  properties: Type.Union([Type.Record(Type.String(), Type.Object({ type: Type.String(), required: Type.Boolean() })), Type.Null()]),
  frequency: Type.Optional(Type.Enum(['monthly', 'quarterly', 'semesterly', 'annually'], { description: 'only on standard.period' })),
})

export const FieldSchemaSchema = Type.Object({
  schema_hash: Type.String({
    description: 'SHA-256 (hex) of the schema: changes when a field is added, removed or modified, or a quota type changes',
  }),
  count: Type.Integer(),
  fields: Type.Array(FieldDescriptorSchema),
})

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
