import type { Static } from 'typebox'
import type {
  ForbiddenBodySchema,
  NotFoundBodySchema,
  TooManyRequestsBodySchema,
  UnauthorizedBodySchema,
  ValidationErrorBodySchema,
} from '../routes/schemas.ts'
import type { ImportReceiptSchema } from '../imports/enqueue.ts'
import type {
  ArchiveItemSchema,
  AttributionReceiptSchema,
  GroupAttributionSchema,
  ImportAnswerSchema,
  ManagerAttributionSchema,
  UserPayloadSchema,
} from '../routes/v1/import-schemas.ts'
import type { offsetPageSchema } from '../v1/offset-page.ts'
import type { V1RecordRowSchema, V1StatementRowSchema } from '../v1/reporting.ts'
import type { V1RecordSchema } from '../v1/table-records.ts'
import type { V1UserSchema } from '../v1/user-rows.ts'
import type { DataStructureListSchema, DataStructureSchema } from '../v2/data-structures.ts'
import type {
  AmountSchema,
  FieldDescriptorSchema,
  FieldSchemaSchema,
  QuotaValueRowSchema,
  RecordRowSchema,
  RowSchema,
  StatementRowSchema,
  UserReferenceSchema,
} from '../v2/schemas.ts'
import type { PageMetaSchema } from '../v2/pages.ts'

/**
 * The shapes of the interface, as the TypeBox schemas the routes answer with declare them (beside the routes, or
 * beside the services that build them). These imports are types only: they vanish at run time, so the client
 * loads none of the server's code (a test holds it to that).
 */

export type PageMeta = Static<typeof PageMetaSchema>

export type ValidationErrorBody = Static<typeof ValidationErrorBodySchema>
export type UnauthorizedBody = Static<typeof UnauthorizedBodySchema>
export type ForbiddenBody = Static<typeof ForbiddenBodySchema>
export type NotFoundBody = Static<typeof NotFoundBodySchema>
export type TooManyRequestsBody = Static<typeof TooManyRequestsBodySchema>
/** The body of an error answer: one of the documented ones, or whatever a gateway in between sent. */
export type ErrorBody = ValidationErrorBody | UnauthorizedBody | ForbiddenBody | NotFoundBody | TooManyRequestsBody | unknown

// v2
export type DataStructure = Static<typeof DataStructureSchema>
export type DataStructureType = DataStructure['type']
export type DataStructureList = Static<typeof DataStructureListSchema>
export type FieldDescriptor = Static<typeof FieldDescriptorSchema>
export type FieldSchema = Static<typeof FieldSchemaSchema>

/** A v2 row: keys are the `api_key`s of the structure's fields. */
export type Row = Static<typeof RowSchema>

/** The values of a row's standard fields: an amount (`format: currency`), a user (`user_reference`). */
export type Amount = Static<typeof AmountSchema>
export type UserReference = Static<typeof UserReferenceSchema>

/** A statement row: the standard keys the specification names, then `custom.*` per the schema. */
export type StatementRow = Row & Static<typeof StatementRowSchema>

/** A reporting record row: the standard keys, then `datatable.*` and `custom.*` per the schema. */
export type RecordRow = Row & Static<typeof RecordRowSchema>

/** A quota value: exactly these five keys. `standard.value` is an amount for an `amount` quota, else a number. */
export type QuotaValueRow = Static<typeof QuotaValueRowSchema>

export interface Page<R> {
  data: R[]
  meta: PageMeta
}

/** The query of a v2 page. Instants: a `Date`, or an ISO 8601 string with an explicit offset. */
export interface PageQuery {
  start_id?: string
  /** 1 to 2000. */
  limit?: number
  last_modified_after?: Date | string
  last_modified_before?: Date | string
}

// v1
type OffsetEnvelope = Static<ReturnType<typeof offsetPageSchema>>
/** `{count, data, next}` of a v1 list. */
export type OffsetPage<R> = Omit<OffsetEnvelope, 'data'> & { data: R[] }

export interface OffsetQuery {
  offset?: number | bigint | string
  /** 0 to 2000; 0 answers only the count. */
  limit?: number
}

/** A user of the listing; custom attributes follow under their API keys. */
export type User = Static<typeof V1UserSchema> & Record<string, unknown>
/** A data-table record: keys are the table's field API keys. */
export type TableRecord = Static<typeof V1RecordSchema> & Record<string, unknown>
export type V1StatementRow = Static<typeof V1StatementRowSchema> & Record<string, unknown>
export type V1RecordRow = Static<typeof V1RecordRowSchema>

/** An item of `PUT /v1/users/bulk`: matched by `email`; a field left out is unchanged, `null` empties it. */
export type UserPayload = Static<typeof UserPayloadSchema> & {
  /** Custom attributes, by their API keys. */
  [attribute: string]: unknown
}

/** An item of `PUT /v1/users/managers/bulk`; months are YYYY-MM, a null `end_date` is open-ended. */
export type ManagerAttribution = Static<typeof ManagerAttributionSchema>

/** An item of `PUT /v1/users/groups/bulk`. */
export type GroupAttribution = Static<typeof GroupAttributionSchema>

/** An item of `DELETE /v1/users/archive/bulk`: `end_date` (YYYY-MM) is the last month of activity. */
export type ArchiveItem = Static<typeof ArchiveItemSchema>

/** What every method and walk takes beside its arguments. */
export interface CallOptions {
  /**
   * Abandons the call or the walk when it aborts, and any wait in it (pacing, a 429's or a 503's `Retry-After`, the
   * pause before a read is sent again): it then rejects with the signal's reason. A write already sent may have
   * reached the service all the same.
   */
  signal?: AbortSignal
}

export interface UpsertOptions extends CallOptions {
  /** Seconds the import stays open for more calls to the same endpoint, which join it. */
  debounce?: number
}

export interface TableUpsertOptions extends UpsertOptions {
  /** Delete the whole content of the table before the import. */
  all?: boolean
  /** Keep the manual overrides made in the table (this service's name for the flag). */
  keepOverrides?: boolean
}

/** What an upsert answers: the import it created or joined, and how many items the call carried. */
export type ImportReceipt = Static<typeof ImportReceiptSchema>
/**
 * What an attribution upsert (`upsertManagers`, `upsertGroups`) answers: its import, and `count` and `data`, the
 * items the call carried, as sent (the route's schema says no more of them than objects: the client knows it sent).
 */
export type AttributionReceipt<Item> = Omit<Static<typeof AttributionReceiptSchema>, 'data'> & { data: Item[] }
/** The body of `GET /v1/imports/{import_id}`. */
export type ImportView = Static<typeof ImportAnswerSchema>
export type ImportRecord = ImportView['data_import']
