import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import {
  changeQuotaType,
  MetricEditSchema,
  reviseCommissionLine,
  reviseMetric,
  reviseQuotaValue,
  reviseStatement,
  reviseStructure,
  StructureEditSchema,
} from '../admin/data-edits.ts'
import { QUOTA_TYPES, STATEMENT_STATUSES } from '../store/model.ts'
import { AdminErrorResponses } from './schemas.ts'
import { Nullable, ObjectIdSchema } from '../domain/schemas.ts'

/**
 * Admin edits of a company's data (registered inside the admin plugin, behind its token): a quota's type,
 * a row's values and modification time, a structure's metrics and fields, a custom metric. Each answers the
 * record as changed. Row edits set `modified_at` to the given instant, or to now.
 */

const Changed = Type.Object({ id: Type.String() }, { additionalProperties: true, description: 'the record as changed' })
const ModifiedAt = Type.Optional(Type.String({ description: 'ISO 8601 date-time; without it, now' }))
const edit = <T extends Parameters<typeof Type.Object>[0]>(properties: T) => Type.Object(properties, { additionalProperties: false })

export const adminEditRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.patch(
    '/companies/:id/quotas/:quota_id',
    {
      schema: {
        summary: "Change a quota's type (values and their modification times stay)",
        operationId: 'adminChangeQuotaType',
        description: "Every value is then served by the new type and the quota's `schema_hash` changes.",
        params: Type.Object({ id: ObjectIdSchema, quota_id: Type.String() }),
        body: edit({ type: Type.Enum([...QUOTA_TYPES]) }),
        response: { 200: Changed, ...AdminErrorResponses },
      },
    },
    async (request) => changeQuotaType(app.store, app.clock, request.params.id, request.params.quota_id, request.body.type),
  )

  app.patch(
    '/companies/:id/statements/:statement_id',
    {
      schema: {
        summary: "Change a statement's values and modification time",
        operationId: 'adminEditStatement',
        description:
          "Sets the modification time to `modified_at`, or now: what an incremental sync picks up. A calculated statement moved back to `pending` is recalculated at once, from its plan's records as they are.",
        params: Type.Object({ id: ObjectIdSchema, statement_id: Type.String() }),
        body: edit({
          modified_at: ModifiedAt,
          payment: Type.Optional(Nullable(Type.Number())),
          status: Type.Optional(Type.Enum([...STATEMENT_STATUSES])),
        }),
        response: { 200: Changed, ...AdminErrorResponses },
      },
    },
    async (request) => {
      // A calculated statement's exact sums are the calculation's own (model.ts): never served.
      const { sums: _sums, ...statement } = await reviseStatement(
        app.store,
        app.clock,
        request.params.id,
        request.params.statement_id,
        request.body,
      )
      return statement
    },
  )

  app.patch(
    '/companies/:id/commission-lines/:line_id',
    {
      schema: {
        summary: "Change a commission line's commission and modification time",
        operationId: 'adminEditCommissionLine',
        description: 'Sets the modification time to `modified_at`, or now: what an incremental sync picks up.',
        params: Type.Object({ id: ObjectIdSchema, line_id: Type.String() }),
        body: edit({ modified_at: ModifiedAt, commission: Type.Optional(Type.Number()) }),
        response: { 200: Changed, ...AdminErrorResponses },
      },
    },
    async (request) => reviseCommissionLine(app.store, app.clock, request.params.id, request.params.line_id, request.body),
  )

  app.patch(
    '/companies/:id/quota-values/:value_id',
    {
      schema: {
        summary: "Change a quota value's number, source and modification time",
        operationId: 'adminEditQuotaValue',
        description: 'Sets the modification time to `modified_at`, or now: what an incremental sync picks up.',
        params: Type.Object({ id: ObjectIdSchema, value_id: Type.String() }),
        body: edit({
          modified_at: ModifiedAt,
          value: Type.Optional(Type.Number()),
          source: Type.Optional(Type.Enum(['local', 'integration'])),
        }),
        response: { 200: Changed, ...AdminErrorResponses },
      },
    },
    async (request) => reviseQuotaValue(app.store, app.clock, request.params.id, request.params.value_id, request.body),
  )

  app.patch(
    '/companies/:id/reporting-structures/:structure_id',
    {
      schema: {
        summary: 'Rename a reporting structure, or replace the custom metrics and data-table fields it shows',
        operationId: 'adminEditReportingStructure',
        description: 'Changes the `schema_hash` of the structure when its fields change.',
        params: Type.Object({ id: ObjectIdSchema, structure_id: Type.String() }),
        body: StructureEditSchema,
        response: { 200: Changed, ...AdminErrorResponses },
      },
    },
    async (request) => reviseStructure(app.store, app.clock, request.params.id, request.params.structure_id, request.body),
  )

  app.patch(
    '/companies/:id/custom-metrics/:api_key',
    {
      schema: {
        summary: 'Change a custom metric, named by its API key',
        operationId: 'adminEditCustomMetric',
        description: 'Changes the `schema_hash` of the structures that show the metric.',
        params: Type.Object({ id: ObjectIdSchema, api_key: Type.String() }),
        body: MetricEditSchema,
        response: { 200: Changed, ...AdminErrorResponses },
      },
    },
    async (request) => reviseMetric(app.store, app.clock, request.params.id, request.params.api_key, request.body),
  )
}
