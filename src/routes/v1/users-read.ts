import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { USER_STATUSES } from '../../store/model.ts'
import { listUsers } from '../../v1/user-rows.ts'
import { baseUrl } from '../base-url.ts'
import { AuthenticatedErrorResponses } from '../schemas.ts'
import { Nullable, OffsetQuerySchema, offsetPageSchema } from './offset-schemas.ts'

/** A user of the v1 listing: the standard fields, then every custom attribute under its API key (null when unset). */
export const V1UserSchema = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    name: Nullable(Type.String()),
    status: Type.Enum([...USER_STATUSES]),
    role: Nullable(Type.String()),
    currency: Nullable(Type.String()),
    calculation_currency: Nullable(Type.String()),
  },
  { additionalProperties: true },
)

/** `GET /v1/users`. The writes on users live in their own plugins. */
export const userReadRoutes: FastifyPluginAsyncTypebox = async (app) => {
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
    async (request) => listUsers(app.store, request.principal.company.id, request.query, baseUrl(request)),
  )
}
