import { type Static, type TSchema, type TUnsafe, Type } from 'typebox'

/**
 * The primitives of the TypeBox schemas that domain modules and routes share: a schema of a shape lives in the
 * lowest layer that uses it (free of HTTP), and the routes import it from there.
 */

/**
 * A value or null, as one JSON Schema `type` list rather than a union: with type coercion on, Ajv coerces a
 * value to the first branch of a union that accepts it after coercion, so `[null, number]` turns 0 into null and
 * `[number, null]` turns null into 0; a type list keeps both as sent.
 */
export function Nullable<Schema extends TSchema & { type: string }>(schema: Schema): TUnsafe<Static<Schema> | null> {
  return Type.Unsafe<Static<Schema> | null>({ ...schema, type: [schema.type, 'null'] })
}

/**
 * A value of `schema` or null in an answer, as a union. Answers are serialized, not coerced, so a union is safe
 * here; what clients send takes `Nullable`.
 */
export const OrNull = <Schema extends TSchema>(schema: Schema) => Type.Union([schema, Type.Null()])

export const ObjectIdSchema = Type.String({ pattern: '^[0-9a-fA-F]{24}$', description: 'ObjectId string' })

/**
 * A map's key that may be any string, as `Type.Record(AnyKey, value)` checks every value: a Record of
 * `Type.String()` keys is the pattern `^.*$`, and `.` matches no line break, so a key holding one escaped the check
 * of its value (in TypeBox and in any JSON Schema validator).
 */
export const AnyKey = Type.String({ pattern: '^[\\s\\S]*$' })

/** An issue with its error family named, as a 400-family body lists it: its family, what it is about, what is wrong. */
export const ErrorItemSchema = Type.Object({ error: Type.String(), resource: Type.String(), description: Type.String() })
