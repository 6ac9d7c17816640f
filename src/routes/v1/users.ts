import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { enqueueImport, ImportReceiptSchema } from '../../imports/enqueue.ts'
import { MAX_USERS_PER_CALL, smallCallBodyLimit } from '../../imports/limits.ts'
import { KEPT_PAGE_BYTES, KEPT_PAGE_ROWS, KEPT_PAGES, VersionedAnswers } from '../../reporting/versioned-answers.ts'
import { type OffsetPage, offsetPageSchema, OffsetQuerySchema, WalkPositions } from '../../v1/offset-page.ts'
import { listUsers, type V1User, V1UserSchema } from '../../v1/user-rows.ts'
import { baseUrl } from '../base-url.ts'
import { AuthenticatedErrorResponses } from '../schemas.ts'
import { admitUpsert, bodyBytes, resendKeys } from './import-admission.ts'
import { bulkBodySchema, DATA_BODY, DebounceSchema } from './import-schemas.ts'

/** `GET /v1/users`, and `PUT /v1/users/bulk`: an asynchronous upsert of users, matched by email. */
export const userRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // Small pages are answered again while the data version holds: a connector checking its key, a poll.
  const pages = new VersionedAnswers<OffsetPage<V1User>>(KEPT_PAGES, (page) => JSON.stringify(page).length <= KEPT_PAGE_BYTES)
  const positions = new WalkPositions()
  app.get(
    '/users',
    {
      schema: {
        summary: 'List the users of the company',
        operationId: 'listUsers',
        description:
          'Every user whatever their status, standard fields first, then each custom attribute under its API key. `limit=0` answers only the count.',
        querystring: OffsetQuerySchema,
        response: { 200: offsetPageSchema(V1UserSchema), ...AuthenticatedErrorResponses },
      },
    },
    async (request) => {
      const companyId = request.principal.company.id
      const { offset = '0', limit } = request.query
      const base = baseUrl(request)
      const list = () => listUsers(app.store, companyId, request.query, base, positions)
      if (limit === undefined || limit > KEPT_PAGE_ROWS) return list()
      // The page's `next` is an absolute URL: it is kept for each base URL.
      return pages.answer(app.store, `${companyId} ${base} ${offset} ${limit}`, list)
    },
  )

  app.put(
    '/users/bulk',
    {
      preParsing: admitUpsert,
      bodyLimit: smallCallBodyLimit(app.config.bodyLimitMb),
      config: DATA_BODY,
      schema: {
        summary: 'Create or update users (asynchronous import)',
        operationId: 'upsertUsers',
        description:
          'Matched by email, case-insensitively. 200 means the import was created, not applied: read it with `GET /v1/imports/{import_id}` until `status` is `finished`. All or nothing per call, except a repeated email, skipped and reported.',
        querystring: Type.Object({ debounce: Type.Optional(DebounceSchema) }),
        body: bulkBodySchema(
          MAX_USERS_PER_CALL,
          'Users: email (the matching key), name, role, currency, calculation_currency, country, code, arrival_date, junior, and custom attributes by API key',
        ),
        response: { 200: ImportReceiptSchema, ...AuthenticatedErrorResponses },
      },
    },
    async (request) =>
      enqueueImport(app.store, app.clock, {
        company: request.principal.company,
        target: 'users',
        items: request.body.data,
        bytes: bodyBytes(request),
        queueLimitBytes: app.config.importQueueLimitBytes,
        debounceSeconds: request.query.debounce,
        resend: resendKeys(request),
      }),
  )
}
