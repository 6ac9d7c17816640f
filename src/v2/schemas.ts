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
