import { type Static, Type } from 'typebox'
import { AnyKey } from '../domain/schemas.ts'

/**
 * The TypeBox schemas of the v2 shapes that the services build: the routes validate, serialize and document with
 * them, the services use their types (`import type`), so that the import worker's thread, which renders rows and
 * field schemas but serves no HTTP, loads no TypeBox.
 */

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
  properties: Type.Union([Type.Record(AnyKey, Type.Object({ type: Type.String(), required: Type.Boolean() })), Type.Null()]),
  frequency: Type.Optional(Type.Enum(['monthly', 'quarterly', 'semesterly', 'annually'], { description: 'only on standard.period' })),
})
export type FieldDescriptor = Static<typeof FieldDescriptorSchema>
export type FieldType = FieldDescriptor['type']
export type FieldOrigin = FieldDescriptor['origin']
export type PropertyMap = NonNullable<FieldDescriptor['properties']>

export const FieldSchemaSchema = Type.Object({
  schema_hash: Type.String({
    description: 'SHA-256 (hex) of the schema: changes when a field is added, removed or modified, or a quota type changes',
  }),
  count: Type.Integer(),
  fields: Type.Array(FieldDescriptorSchema),
})
export type FieldSchema = Static<typeof FieldSchemaSchema>

/** A row's keys are the structure's field `api_key`s (see its fields endpoint), so the schema cannot list them. */
export const RowSchema = Type.Record(AnyKey, Type.Unknown(), { description: 'keys: the api_key of each field of the structure' })
export type Row = Static<typeof RowSchema>

/** An amount of a v2 row: each carries its own currency, so one page may mix currencies. */
export const AmountSchema = Type.Object({ value: Type.Number(), currency: Type.String() })

export const UserReferenceSchema = Type.Object({
  id: Type.String(),
  email: Type.Union([Type.String(), Type.Null()], { description: 'null for a user that can no longer be resolved' }),
})

/**
 * The rows of each kind of structure, for clients and the OpenAPI document: the standard keys the specification
 * names, typed; the company's keys (`custom.*`, `datatable.*`) follow in statements and records, as the fields
 * endpoint describes them. The rows themselves are built and serialized as open records (`Row`, rows.ts).
 */
export const StatementRowSchema = Type.Object(
  {
    'standard.id': Type.String(),
    'standard.user': UserReferenceSchema,
    'standard.date': Type.String({ description: 'YYYY-MM-DD' }),
    'standard.total_commission': Type.Union([AmountSchema, Type.Null()], {
      description: 'null when the figures cannot be stated (an amount in a currency without an exchange rate)',
    }),
    'standard.status': Type.Enum(['paid', 'pending', 'validated']),
  },
  { description: 'then a custom.<metric> key for each custom metric of the field schema' },
)

export const RecordRowSchema = Type.Object(
  {
    'standard.id': Type.String(),
    'standard.user': UserReferenceSchema,
    'standard.commission_impact': AmountSchema,
    'standard.date': Type.String({ description: 'YYYY-MM-DD' }),
  },
  { description: 'then a datatable.<field> key for each field of the data table, and a custom.<metric> key for each custom metric' },
)

export const QuotaValueRowSchema = Type.Object(
  {
    'standard.id': Type.String(),
    'standard.user': UserReferenceSchema,
    'standard.period': Type.String({ description: 'YYYY-MM, YYYY-Qn, YYYY-Sn or YYYY, by the quota frequency' }),
    'standard.value': Type.Union([AmountSchema, Type.Number()], { description: 'an amount for an amount quota, else a number' }),
    'standard.source': Type.Enum(['local', 'integration']),
  },
  { additionalProperties: false, description: 'exactly these five keys' },
)
export type QuotaValueRow = Static<typeof QuotaValueRowSchema>
