import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { ARCHIVED_MESSAGE, archiveUsers, MAX_ARCHIVED_PER_CALL } from '../../v1/archive-users.ts'
import { smallCallBodyLimit } from '../../imports/limits.ts'
import { AuthenticatedErrorResponses } from '../schemas.ts'
import { bulkBodySchema, DATA_BODY } from './import-schemas.ts'

/** `DELETE /v1/users/archive/bulk`: archives users synchronously, all or nothing. */
export const archiveRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.delete(
    '/users/archive/bulk',
    {
      bodyLimit: smallCallBodyLimit(app.config.bodyLimitMb),
      config: DATA_BODY,
      schema: {
        summary: 'Archive users (synchronous, all or nothing)',
        operationId: 'archiveUsers',
        description:
          'Archives at most 50 users by email; `end_date` (YYYY-MM) is the last month of activity. On any error nobody is archived, and every problem is listed.',
        body: bulkBodySchema(MAX_ARCHIVED_PER_CALL, 'Items {user: email, end_date: YYYY-MM (optional), the last month of activity}'),
        // Every refusal is a 400, its errors being ValidationError, NotFoundError (an unknown user) or ConflictError
        // (a user who manages someone in the archive period).
        response: { 200: Type.Object({ message: Type.String() }), ...AuthenticatedErrorResponses },
      },
    },
    async (request) => {
      await archiveUsers(app.store, app.clock, request.principal.company.id, request.body.data)
      return { message: ARCHIVED_MESSAGE }
    },
  )
}
