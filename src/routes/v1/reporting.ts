import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { Type } from 'typebox'
import { offsetPageSchema, OffsetQuerySchema, WalkPositions } from '../../v1/offset-page.ts'
import { type DeprecatedPage, listRecordRows, listStatementRows, V1RecordRowSchema, V1StatementRowSchema } from '../../v1/reporting.ts'
import { baseUrl } from '../base-url.ts'
import { AuthenticatedErrorResponses } from '../schemas.ts'

/** A deprecated read's page, its `Link` naming the v2 route that replaces it (`Deprecation` is the hook's, below). */
function answerDeprecated<Row>(reply: FastifyReply, { page, successor }: DeprecatedPage<Row>) {
  reply.header('link', `<${successor}>; rel="successor-version"`)
  return page
}

/** The two deprecated reporting reads. Every answer, errors included, carries `Deprecation`, but a 414, answered before any route is found. */
export const reportingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const positions = new WalkPositions()
  // `Deprecation: true` says the route is deprecated without a date (none is published). On sending, not on the
  // request: the key's and the rate limit's hooks run first and may refuse the call.
  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.header('deprecation', 'true')
    done(null, payload)
  })

  // `/v1/reporting/statements` is the path of the real service's documentation: an alias, with the same headers.
  for (const path of ['/reporting', '/reporting/statements']) {
    app.get(
      path,
      {
        schema: {
          summary: 'Deprecated: list the statements (use GET /v2/reporting/{table_id}/statements)',
          operationId: path === '/reporting' ? 'listReportingStatements' : 'listReportingStatementsByDocumentedPath',
          description:
            'Deprecated, still served: the live statements in the v1 shape. Answers carry `Deprecation: true`; a 200 also `Link` to the v2 successor. /v1/reporting and /v1/reporting/statements answer alike.',
          deprecated: true,
          querystring: OffsetQuerySchema,
          response: { 200: offsetPageSchema(V1StatementRowSchema), ...AuthenticatedErrorResponses },
        },
      },
      async (request, reply) =>
        answerDeprecated(
          reply,
          await listStatementRows(app.store, request.principal.company.id, request.query, baseUrl(request), positions, `/v1${path}`),
        ),
    )
  }

  app.get(
    '/reporting/:data_table_id/records',
    {
      schema: {
        summary: 'Deprecated: list the commission lines of a data table (use GET /v2/reporting/{table_id}/records)',
        operationId: 'listReportingRecords',
        description:
          'Deprecated, still served: the commission lines of a live data table in the v1 shape. Answers carry `Deprecation: true`; a 200 also `Link` to the v2 successor.',
        deprecated: true,
        params: Type.Object({
          data_table_id: Type.String({
            description: "Id of a live data table, or of a live record reporting structure over it (the real documentation's {table_id})",
          }),
        }),
        querystring: OffsetQuerySchema,
        response: { 200: offsetPageSchema(V1RecordRowSchema), ...AuthenticatedErrorResponses },
      },
    },
    async (request, reply) =>
      answerDeprecated(
        reply,
        await listRecordRows(
          app.store,
          request.principal.company.id,
          request.params.data_table_id,
          request.query,
          baseUrl(request),
          positions,
        ),
      ),
  )
}
