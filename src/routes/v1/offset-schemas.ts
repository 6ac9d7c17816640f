import { type TSchema, Type } from 'typebox'
import { MAX_LIMIT, MAX_OFFSET } from '../../v1/offset-page.ts'

/** The paging parameters and the envelope every v1 list shares. */

export const OffsetQuerySchema = Type.Object({
  offset: Type.Optional(
    Type.String({
      pattern: '^[0-9]+$',
      description: `Rows to skip: an integer from 0 to ${MAX_OFFSET} (default 0), read as text because a JSON number loses precision above 2^53`,
    }),
  ),
  limit: Type.Optional(
    Type.Integer({ minimum: 0, maximum: MAX_LIMIT, default: MAX_LIMIT, description: 'Rows per page; 0 answers only the count' }),
  ),
})

/** `{count, data, next}` around rows of the given shape. */
export function offsetPageSchema<Row extends TSchema>(row: Row) {
  return Type.Object({
    count: Type.Integer({ description: 'Every row of the list, not only this page' }),
    data: Type.Array(row),
    next: Type.Union([Type.String(), Type.Null()], { description: 'Absolute URL of the next page; null after the last' }),
  })
}
