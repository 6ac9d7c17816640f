import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { quotaValuePage } from '../../v2/extraction.ts'
import { QuotaPageQuerySchema } from '../../v2/pages.ts'
import { baseUrl } from '../base-url.ts'
import { QuotaValuePageResponses, serializeWithJson } from './page-schemas.ts'

const QuotaParamsSchema = Type.Object({ quota_id: Type.String({ description: 'id of a live quota, from discovery' }) })

export const quotaValueRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/quotas/:quota_id/values',
    {
      schema: {
        summary: 'Values of a quota (one row per user and period), in creation order; both date bounds inclusive',
        operationId: 'getQuotaValues',
        description:
          'One page of quota values, exactly five keys each; `standard.value` is an amount for an `amount` quota, a number otherwise. Equal or inverted date bounds are 400; a reporting table id is 404.',
        params: QuotaParamsSchema,
        querystring: QuotaPageQuerySchema,
        response: QuotaValuePageResponses,
      },
      serializerCompiler: serializeWithJson,
    },
    async (request) => quotaValuePage(app.store, request.principal.company.id, request.params.quota_id, request.query, baseUrl(request)),
  )
}
