import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { type Static, Type } from 'typebox'
import { KEPT_PAGE_BYTES, KEPT_PAGES, VersionedAnswers } from '../../reporting/versioned-answers.ts'
import { type KeptPages, type PageBytes, reportingPage } from '../../v2/extraction.ts'
import { RowPageQuerySchema } from '../../v2/pages.ts'
import { PageReadAhead } from '../../v2/read-ahead.ts'
import { baseUrl } from '../base-url.ts'
import { RecordPageResponses, sendPageBytes, serializeWithJson, StatementPageResponses } from './page-schemas.ts'

const TableParamsSchema = Type.Object({ table_id: Type.String({ description: 'id of a live reporting structure, from discovery' }) })
type ReportingRequest = FastifyRequest<{ Params: Static<typeof TableParamsSchema>; Querystring: Static<typeof RowPageQuerySchema> }>

export const reportingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // One for both endpoints: a walk holds one page at a time, whichever it walks.
  const kept: KeptPages = {
    readAhead: new PageReadAhead<PageBytes>(),
    answered: new VersionedAnswers<PageBytes>(KEPT_PAGES, (page) => page.bytes.length <= KEPT_PAGE_BYTES),
  }
  const answer = (endpoint: 'statements' | 'records') => async (request: ReportingRequest, reply: FastifyReply) => {
    const { company } = request.principal
    const page = await reportingPage(endpoint, app.store, company.id, request.params.table_id, request.query, baseUrl(request), kept)
    if (page.readAhead) app.metrics.pagesReadAhead.inc()
    // At the next turn of the event loop, once this page is written to the socket. (At its 'finish', when the
    // last byte is handed over, the walk was slower: docs/performance.md.)
    setImmediate(page.readNext)
    return sendPageBytes(reply, page.bytes)
  }

  app.get(
    '/reporting/:table_id/statements',
    {
      schema: {
        summary: 'Statements of a statement reporting structure, in id order',
        operationId: 'getStatements',
        description:
          'One page of statements; follow `meta.next_url` until `meta.has_more` is false. `last_modified_after` and `last_modified_before` select the rows modified strictly after and before an instant.',
        params: TableParamsSchema,
        querystring: RowPageQuerySchema,
        response: StatementPageResponses,
      },
      serializerCompiler: serializeWithJson,
    },
    answer('statements'),
  )

  app.get(
    '/reporting/:table_id/records',
    {
      schema: {
        summary: 'Reporting records (commission lines) of a record reporting structure, in id order',
        operationId: 'getRecords',
        description:
          'One page of reporting records; follow `meta.next_url` until `meta.has_more` is false. Data-table structures are not served here: use `GET /v1/tables/{data_table_key}/records`.',
        params: TableParamsSchema,
        querystring: RowPageQuerySchema,
        response: RecordPageResponses,
      },
      serializerCompiler: serializeWithJson,
    },
    answer('records'),
  )
}
