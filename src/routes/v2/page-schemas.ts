import type { FastifyReply } from 'fastify'
import { QuotaValuePageSchema, RecordPageSchema, StatementPageSchema } from '../../v2/pages.ts'
import { AuthenticatedErrorResponses } from '../schemas.ts'

/** The answers of the v2 row endpoints (statements, records, quota values); their query and page are src/v2/pages.ts's. */

export const StatementPageResponses = { 200: StatementPageSchema, ...AuthenticatedErrorResponses }
export const RecordPageResponses = { 200: RecordPageSchema, ...AuthenticatedErrorResponses }
export const QuotaValuePageResponses = { 200: QuotaValuePageSchema, ...AuthenticatedErrorResponses }

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
