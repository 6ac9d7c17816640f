import type { FastifyReply } from 'fastify'
import { Type } from 'typebox'
import { DEFAULT_QUOTA_PAGE_LIMIT, DEFAULT_ROW_PAGE_LIMIT, MAX_PAGE_LIMIT } from '../../v2/pages.ts'
import { AuthenticatedErrorResponses, PageMetaSchema } from '../schemas.ts'
import { ObjectIdSchema } from '../../domain/schemas.ts'

/** Schemas of the v2 row endpoints (statements, records, quota values). */

const DATE_TIME = 'ISO 8601 date-time; send an explicit offset (Z or ±hh:mm): one without is read as UTC'

/**
 * The page query of an endpoint whose page holds `defaultLimit` rows when the request names no `limit`. Other
 * parameters are ignored, as on v1 and on the real service (a cache-buster or a tracing parameter must not fail
 * a sync); a known parameter with a bad value is a 400.
 */
function pageQuerySchema(defaultLimit: number) {
  return Type.Object({
    start_id: Type.Optional({ ...ObjectIdSchema, description: 'start after this id (the previous page’s meta.next_start_id)' }),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_LIMIT, default: defaultLimit, description: 'rows per page' })),
    last_modified_after: Type.Optional(Type.String({ description: DATE_TIME })),
    last_modified_before: Type.Optional(Type.String({ description: DATE_TIME })),
  })
}

/** Statements and records: 1,000 rows by default. */
export const RowPageQuerySchema = pageQuerySchema(DEFAULT_ROW_PAGE_LIMIT)
/** Quota values: 2,000 rows by default. */
export const QuotaPageQuerySchema = pageQuerySchema(DEFAULT_QUOTA_PAGE_LIMIT)

/** A row's keys are the structure's field `api_key`s (see its fields endpoint), so the schema cannot list them. */
export const RowSchema = Type.Record(Type.String(), Type.Unknown(), { description: 'keys: the api_key of each field of the structure' })

export const PageSchema = Type.Object({ data: Type.Array(RowSchema), meta: PageMetaSchema })

export const PageResponses = { 200: PageSchema, ...AuthenticatedErrorResponses }

/**
 * Pages are serialized with JSON.stringify: their rows have keys that only the company's configuration knows,
 * which a schema-compiled serializer would have to walk generically, and more slowly. (Statement and record pages
 * arrive as bytes already, `sendPageBytes`, so that a page read ahead is kept as bytes; on their routes this
 * serializes only the error bodies.)
 */
export const serializeWithJson = () => (data: unknown) => JSON.stringify(data)

/**
 * Sends a page already rendered as UTF-8 JSON (statements: src/v2/statement-texts.ts); the route's schema still
 * documents the page's shape, which the bytes have.
 */
export function sendPageBytes(reply: FastifyReply, bytes: Buffer): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(bytes)
}
