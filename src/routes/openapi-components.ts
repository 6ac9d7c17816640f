import type { TSchema } from 'typebox'
import { FixtureSchema } from '../fixtures/schema.ts'
import {
  ForbiddenBodySchema,
  NotFoundBodySchema,
  ServerErrorBodySchema,
  TooManyRequestsBodySchema,
  UnauthorizedBodySchema,
  ValidationErrorBodySchema,
} from './schemas.ts'
import { ImportReceiptSchema } from '../imports/enqueue.ts'
import { ImportErrorSchema } from '../store/schemas.ts'
import { ImportAnswerSchema } from './v1/import-schemas.ts'
import { V1RecordRowSchema, V1StatementRowSchema } from '../v1/reporting.ts'
import { offsetPageSchema } from '../v1/offset-page.ts'
import { V1RecordSchema } from '../v1/table-records.ts'
import { V1UserSchema } from '../v1/user-rows.ts'
import { DataStructureListSchema, DataStructureSchema } from '../v2/data-structures.ts'
import {
  AmountSchema,
  FieldDescriptorSchema,
  FieldSchemaSchema,
  QuotaValueRowSchema,
  RecordRowSchema,
  StatementRowSchema,
  UserReferenceSchema,
} from '../v2/schemas.ts'
import { PageMetaSchema, QuotaValuePageSchema, RecordPageSchema, StatementPageSchema } from '../v2/pages.ts'

/**
 * The reusable schemas of the OpenAPI document (`components.schemas`): rows, pages, errors, imports. Routes
 * keep declaring their schemas inline, as Fastify validates and serializes with them; the document replaces
 * every copy of one of these shapes with a reference to its component, so that a client generator makes one
 * type of each.
 */
const COMPONENTS: Record<string, TSchema> = {
  ValidationErrorBody: ValidationErrorBodySchema,
  UnauthorizedBody: UnauthorizedBodySchema,
  ForbiddenBody: ForbiddenBodySchema,
  NotFoundBody: NotFoundBodySchema,
  TooManyRequestsBody: TooManyRequestsBodySchema,
  ServerErrorBody: ServerErrorBodySchema,
  PageMeta: PageMetaSchema,
  Amount: AmountSchema,
  UserReference: UserReferenceSchema,
  StatementRow: StatementRowSchema,
  RecordRow: RecordRowSchema,
  QuotaValueRow: QuotaValueRowSchema,
  StatementPage: StatementPageSchema,
  RecordPage: RecordPageSchema,
  QuotaValuePage: QuotaValuePageSchema,
  DataStructure: DataStructureSchema,
  DataStructureList: DataStructureListSchema,
  FieldDescriptor: FieldDescriptorSchema,
  FieldSchema: FieldSchemaSchema,
  ImportReceipt: ImportReceiptSchema,
  ImportError: ImportErrorSchema,
  ImportView: ImportAnswerSchema,
  User: V1UserSchema,
  TableRecord: V1RecordSchema,
  V1StatementRow: V1StatementRowSchema,
  V1RecordRow: V1RecordRowSchema,
  UserPage: offsetPageSchema(V1UserSchema),
  TableRecordPage: offsetPageSchema(V1RecordSchema),
  V1StatementPage: offsetPageSchema(V1StatementRowSchema),
  V1RecordPage: offsetPageSchema(V1RecordRowSchema),
  Fixture: FixtureSchema,
}

/** JSON with sorted keys: two schemas of the same shape have the same text. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    item && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).toSorted(([a], [b]) => (a < b ? -1 : 1)))
      : item,
  )
}

const NAME_BY_SHAPE = new Map(Object.entries(COMPONENTS).map(([name, schema]) => [canonical(schema), name]))

/** A copy of `schema` in which every shape of a component (but `except`) is a reference to it. */
export function withComponentRefs(schema: unknown, except?: string): unknown {
  if (Array.isArray(schema)) return schema.map((item) => withComponentRefs(item))
  if (!schema || typeof schema !== 'object') return schema
  const name = NAME_BY_SHAPE.get(canonical(schema))
  if (name && name !== except) return { $ref: `#/components/schemas/${name}` }
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, withComponentRefs(value)]))
}

/**
 * The components, for the document's `components.schemas`. Not Fastify's shared schemas (`addSchema`), which every
 * route's validator and serializer would be given too: a server's memory, for a document (docs/performance.md).
 */
export function componentSchemas(): Record<string, object> {
  return Object.fromEntries(
    Object.entries(COMPONENTS).map(([name, schema]) => [name, { ...(withComponentRefs(schema, name) as object), title: name }]),
  )
}

/** The fixture schema: the documented body of `POST /admin/companies` (whose loader checks it itself). */
export const DocumentedFixtureBody = FixtureSchema
