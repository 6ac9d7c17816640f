import { type TSchema, Type } from 'typebox'
import { ImportReceiptSchema } from '../../imports/enqueue.ts'
import { MAX_DEBOUNCE_SECONDS } from '../../imports/limits.ts'
import { ImportViewSchema } from '../../imports/import-view.ts'
import { AnyKey, OrNull } from '../../domain/schemas.ts'

/** The shapes of the asynchronous upserts and of `GET /v1/imports/{import_id}`. */

/**
 * The answer of an attribution call: the import fields the specification requires, plus `{count, data}`, the
 * items accepted (all of them: they are checked when the import runs), which the real documentation shows.
 */
export const AttributionReceiptSchema = Type.Object({
  ...ImportReceiptSchema.properties,
  count: Type.Integer({ description: 'How many items the call carried' }),
  data: Type.Array(Type.Record(AnyKey, Type.Unknown()), { description: 'The items accepted, as sent' }),
})

export const DebounceSchema = Type.Integer({
  minimum: 0,
  maximum: MAX_DEBOUNCE_SECONDS,
  description: 'Seconds the import waits for more calls to the same endpoint, which join it; counted from the first call',
})

/**
 * A boolean query flag as clients send it: `true`, `false`, `1` or `0`, in any letter case (Python's `requests`
 * writes `True`). Anything else is a 400 naming the parameter. Read it with `flagValue`.
 */
export function BooleanFlagSchema(description: string) {
  return Type.String({
    pattern: '^([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|1|0)$',
    description: `${description}: true, false, 1 or 0, in any case`,
  })
}

/** The value of a flag the route's `BooleanFlagSchema` accepted; absent is false. */
export function flagValue(raw: string | undefined): boolean {
  return raw === '1' || raw?.toLowerCase() === 'true'
}

/**
 * The route option of the calls whose body is `{data: [...]}` (users, attributions, archive): a body that is not
 * one at all (not JSON, not an object, missing, too large) is refused naming `data`, as the specification says
 * of `PUT /v1/users/bulk` ("400 for a malformed body ... error body with resource data"), not `body`.
 */
export const DATA_BODY = { bodyResource: 'data' }

/** `{data: [item]}`: the items are checked when the import runs, so that one bad item cannot hide the others. */
export function bulkBodySchema(maxItems: number, description: string) {
  return Type.Object({ data: Type.Array(Type.Record(AnyKey, Type.Unknown()), { maxItems, description }) })
}

/**
 * The same body as the OpenAPI document shows it, and clients type it: its items' shape, which the service checks
 * item by item (not the route's schema), so that one bad item is reported with the others.
 */
export function documentedBulkBody(maxItems: number, item: TSchema) {
  return Type.Object({ data: Type.Array(item, { maxItems }) })
}

const MONTH = { pattern: '^\\d{4}-(0[1-9]|1[0-2])$', description: 'YYYY-MM' }
/** A field an item may leave out, or send as null. */
const optionalOrNull = <T extends TSchema>(schema: T) => Type.Optional(OrNull(schema))

/** An item of `PUT /v1/users/bulk`: a field left out is unchanged, null empties it. */
export const UserPayloadSchema = Type.Object(
  {
    email: Type.String({ description: 'the matching key, compared case-insensitively' }),
    name: optionalOrNull(Type.String()),
    role: optionalOrNull(Type.String()),
    currency: optionalOrNull(Type.String({ description: 'currency code' })),
    calculation_currency: optionalOrNull(Type.String({ description: 'currency code' })),
    country: optionalOrNull(Type.String()),
    code: optionalOrNull(Type.String()),
    arrival_date: optionalOrNull(Type.String({ description: 'YYYY-MM-DD' })),
    junior: optionalOrNull(Type.Boolean()),
  },
  { description: 'then the custom attributes, by their API keys (created in the company settings first)' },
)

/** An item of `PUT /v1/users/managers/bulk`: a null manager ends the user's managers over the months. */
export const ManagerAttributionSchema = Type.Object(
  {
    user: Type.String({ description: 'email' }),
    manager: Type.Union([Type.String({ description: 'email' }), Type.Null()]),
    start_date: optionalOrNull(Type.String(MONTH)),
    end_date: optionalOrNull(Type.String(MONTH)),
  },
  { additionalProperties: false },
)

/** An item of `PUT /v1/users/groups/bulk`. */
export const GroupAttributionSchema = Type.Object(
  {
    user: Type.String({ description: 'email' }),
    group_dimension: Type.String({ minLength: 1 }),
    group: Type.String({ minLength: 1 }),
    start_date: optionalOrNull(Type.String(MONTH)),
    end_date: optionalOrNull(Type.String(MONTH)),
  },
  { additionalProperties: false },
)

/** An item of `DELETE /v1/users/archive/bulk`: `end_date` is the last month of activity. */
export const ArchiveItemSchema = Type.Object(
  { user: Type.String({ description: 'email' }), end_date: optionalOrNull(Type.String(MONTH)) },
  { additionalProperties: false },
)

/** The answer of `GET /v1/imports/{import_id}`. */
export const ImportAnswerSchema = Type.Object({ data_import: ImportViewSchema })
