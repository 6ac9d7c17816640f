import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { resetCompany, resetEveryCompany, ResetOutcomeSchema } from '../admin/reset.ts'
import type { TestKit } from './test-kit.ts'
import {
  AdminErrorResponses,
  CompanyParamsSchema,
  missingBodyAsEmpty,
  NoBodySchema,
  UnauthorizedBodySchema,
  ValidationErrorBodySchema,
} from './schemas.ts'

/**
 * Reset (registered inside the admin plugin, behind its token): a company, or every company, back to the
 * fixture it was created from, with the same ids and keys.
 */
export const adminResetRoutes: FastifyPluginAsyncTypebox<{ kit: TestKit }> = async (app, { kit }) => {
  app.post(
    '/companies/:id/reset',
    {
      schema: {
        summary: 'Put the company back to the fixture it was created from',
        operationId: 'adminResetCompany',
        description:
          'In one transaction: everything written since goes (imports included, and keys created later), and the fixture is written again with the same ids and keys; its plans are calculated again. Its faults and journal stay.',
        params: CompanyParamsSchema,
        body: NoBodySchema,
        response: { 200: ResetOutcomeSchema, ...AdminErrorResponses },
      },
      preValidation: missingBodyAsEmpty,
    },
    async (request) => resetCompany(app.store, request.params.id),
  )

  app.post(
    '/reset',
    {
      schema: {
        summary: 'Put every company back to its fixture, and clear every journal and fault',
        operationId: 'adminResetEverything',
        description:
          'Each company as POST /admin/companies/{id}/reset does, one after the other; then the journals and faults of this process are cleared.',
        body: NoBodySchema,
        response: {
          200: Type.Object({ count: Type.Integer(), data: Type.Array(ResetOutcomeSchema) }),
          400: ValidationErrorBodySchema,
          401: UnauthorizedBodySchema,
        },
      },
      preValidation: missingBodyAsEmpty,
    },
    async () => {
      const outcomes = await resetEveryCompany(app.store)
      kit.faults.clearAll()
      kit.journal.clearAll()
      return { count: outcomes.length, data: outcomes }
    },
  )
}
