import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { type DataStructureEntry, DataStructureListSchema, listDataStructures } from '../../v2/data-structures.ts'
import { VersionedAnswers } from '../../reporting/versioned-answers.ts'
import { baseUrl } from '../base-url.ts'
import { AuthenticatedErrorResponses } from '../schemas.ts'

export const dataStructureRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // The list holds absolute links: it is kept for each base URL it was built with.
  const lists = new VersionedAnswers<DataStructureEntry[]>()
  app.get(
    '/data-structures',
    {
      schema: {
        summary: 'List the live data structures of the company',
        operationId: 'listDataStructures',
        description:
          'Every live statement reporting, record reporting and quota structure, with the URLs of its fields and rows. Sandbox structures are never listed.',
        response: { 200: DataStructureListSchema, ...AuthenticatedErrorResponses },
      },
    },
    async (request) => {
      const { company } = request.principal
      const base = baseUrl(request)
      return { data: await lists.answer(app.store, `${company.id} ${base}`, () => listDataStructures(app.store, company, base)) }
    },
  )
}
