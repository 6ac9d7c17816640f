import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { USER_STATUSES } from '../../store/model.ts'
import { KEPT_PAGE_BYTES, KEPT_PAGE_ROWS, KEPT_PAGES, VersionedAnswers } from '../../reporting/versioned-answers.ts'
import type { OffsetPage } from '../../v1/offset-page.ts'
import { listUsers, type V1User } from '../../v1/user-rows.ts'
import { baseUrl } from '../base-url.ts'
import { AuthenticatedErrorResponses, OrNull } from '../schemas.ts'
import { OffsetQuerySchema, offsetPageSchema } from './offset-schemas.ts'

/** A user of the v1 listing: the standard fields, then every custom attribute under its API key (null when unset). */
export const V1UserSchema = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    name: OrNull(Type.String()),
    status: Type.Enum([...USER_STATUSES]),
    role: OrNull(Type.String()),
    currency: OrNull(Type.String()),
    calculation_currency: OrNull(Type.String()),
  },
  { additionalProperties: true },
)

/** `GET /v1/users`. The writes on users live in their own plugins. */
export const userReadRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // Small pages are answered again while the data version holds: a connector checking its key, a poll.
  const pages = new VersionedAnswers<OffsetPage<V1User>>(KEPT_PAGES, (page) => JSON.stringify(page).length <= KEPT_PAGE_BYTES)
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
      const list = () => listUsers(app.store, companyId, request.query, base)
      if (limit === undefined || limit > KEPT_PAGE_ROWS) return list()
      // The page's `next` is an absolute URL: it is kept for each base URL.
      return pages.answer(app.store, `${companyId} ${base} ${offset} ${limit}`, list)
    },
  )
}
