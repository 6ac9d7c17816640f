import { Type } from 'typebox'
import { ImportReceiptSchema } from '../../imports/enqueue.ts'
import { MAX_DEBOUNCE_SECONDS } from '../../imports/limits.ts'
import { ImportViewSchema } from '../../imports/import-view.ts'
import { AnyKey } from '../../domain/schemas.ts'

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

/** The answer of `GET /v1/imports/{import_id}`. */
export const ImportAnswerSchema = Type.Object({ data_import: ImportViewSchema })
