import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { existingCompany } from '../admin/company-admin.ts'
import { LAST_WRITABLE_TIME } from '../clock.ts'
import { instantParamProblem, parseInstant, pastItsMillisecond } from '../domain/formats.ts'
import { ValidationError } from '../errors.ts'
import { JournalEntrySchema } from '../test-kit/journal.ts'
import type { TestKit } from './test-kit.ts'
import { AdminErrorResponses, CompanyParamsSchema } from './schemas.ts'

/**
 * The request journal of a company (registered inside the admin plugin, behind its token): its last requests to
 * this process, the latest arrival first, as a test asserts what its client sent (WireMock's verify). Never the API key.
 */
export const adminRequestRoutes: FastifyPluginAsyncTypebox<{ kit: TestKit }> = async (app, { kit }) => {
  const company = async (id: string) => (await existingCompany(app.store, id)).id

  app.get(
    '/companies/:id/requests',
    {
      schema: {
        summary: "The company's last requests, the latest arrival first",
        operationId: 'adminListRequests',
        description: `The last REQUEST_JOURNAL_SIZE (1,000 by default) v1 and v2 requests of the company to this process, with the filters given.`,
        params: CompanyParamsSchema,
        querystring: Type.Object({
          method: Type.Optional(Type.String({ description: 'Only this method' })),
          path_prefix: Type.Optional(Type.String({ description: 'Only paths that start with this' })),
          status: Type.Optional(Type.Integer({ minimum: 100, maximum: 599, description: 'Only this status' })),
          since: Type.Optional(Type.String({ description: 'Only requests at or after this instant (ISO 8601; without an offset, UTC)' })),
        }),
        response: { 200: Type.Object({ count: Type.Integer(), data: Type.Array(JournalEntrySchema) }), ...AdminErrorResponses },
      },
    },
    async (request) => {
      const { since, ...filter } = request.query
      const from = since === undefined ? undefined : parseInstant(since)
      if (from === null) throw new ValidationError({ resource: 'since', description: instantParamProblem(since!) })
      // Every path kept starts with a slash: a prefix without one would match nothing, silently.
      if (filter.path_prefix !== undefined && !filter.path_prefix.startsWith('/'))
        throw new ValidationError({ resource: 'path_prefix', description: `a path starts with /: path_prefix=/${filter.path_prefix}` })
      const companyId = await company(request.params.id)
      // Arrivals are kept to the millisecond: at or after an instant with digits past its millisecond is from the
      // next one, as v2's bounds read it; past the last instant a date writes, no request arrived.
      const fromMs = from && from.getTime() + (pastItsMillisecond(since!) ? 1 : 0)
      if (fromMs !== undefined && fromMs > LAST_WRITABLE_TIME.getTime()) return { count: 0, data: [] }
      const entries = kit.journal.list(companyId, { ...filter, since: fromMs === undefined ? undefined : new Date(fromMs).toISOString() })
      return { count: entries.length, data: entries }
    },
  )

  app.delete(
    '/companies/:id/requests',
    {
      schema: {
        summary: "Clear the company's journal",
        operationId: 'adminClearRequests',
        description: 'Its entries in this process go.',
        params: CompanyParamsSchema,
        response: { 204: Type.Null(), ...AdminErrorResponses },
      },
    },
    async (request, reply) => {
      kit.journal.clear(await company(request.params.id))
      return reply.code(204).send(null)
    },
  )
}
