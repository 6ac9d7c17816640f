import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { existingCompany } from '../admin/company-admin.ts'
import { NotFoundError } from '../errors.ts'
import { FaultDefinitionSchema, FaultSchema } from '../test-kit/faults.ts'
import type { TestKit } from './test-kit.ts'
import { AdminErrorResponses, CompanyParamsSchema } from './schemas.ts'
import { ObjectIdSchema } from '../domain/schemas.ts'

const FaultParams = Type.Object({ id: ObjectIdSchema, fault_id: Type.String() })

/**
 * Fault scenarios of a company (registered inside the admin plugin, behind its token): WireMock's faults, or a
 * toxic proxy's, on the company's v1 and v2 requests to this process. Never on admin, health or metrics routes.
 */
export const adminFaultRoutes: FastifyPluginAsyncTypebox<{ kit: TestKit }> = async (app, { kit }) => {
  const company = async (id: string) => (await existingCompany(app.store, id)).id

  app.post(
    '/companies/:id/faults',
    {
      schema: {
        summary: "Set a fault on the company's requests",
        operationId: 'adminCreateFault',
        description:
          'Matching requests (method, a path whose `*` stands for one segment, and the `query` parameters named, if any) answer `status` with its documented body (429 with Retry-After and the RateLimit-* headers; 503 with Retry-After when `retry_after` is given), wait `delay_ms` (or a time drawn up to `delay_max_ms`) first (a request whose client gives up meanwhile is not served), have their connection closed (`drop`), or are served and have their connection closed instead of their answer (`drop_answer`): on every one (after the first `skip` let through), on the next `times`, or on a `probability` share drawn from `seed`. The first fault set that fires is the one applied.',
        params: CompanyParamsSchema,
        body: FaultDefinitionSchema,
        response: { 201: FaultSchema, ...AdminErrorResponses },
      },
    },
    async (request, reply) => reply.code(201).send(kit.faults.add(await company(request.params.id), request.body, app.clock.now())),
  )

  app.get(
    '/companies/:id/faults',
    {
      schema: {
        summary: "The company's faults, with how often each fired",
        operationId: 'adminListFaults',
        description: 'In the order they were set.',
        params: CompanyParamsSchema,
        response: { 200: Type.Object({ count: Type.Integer(), data: Type.Array(FaultSchema) }), ...AdminErrorResponses },
      },
    },
    async (request) => {
      const faults = kit.faults.list(await company(request.params.id))
      return { count: faults.length, data: faults }
    },
  )

  app.delete(
    '/companies/:id/faults',
    {
      schema: {
        summary: "Clear the company's faults",
        operationId: 'adminClearFaults',
        description: 'Every fault of the company goes.',
        params: CompanyParamsSchema,
        response: { 204: Type.Null(), ...AdminErrorResponses },
      },
    },
    async (request, reply) => {
      kit.faults.clear(await company(request.params.id))
      return reply.code(204).send(null)
    },
  )

  app.delete(
    '/companies/:id/faults/:fault_id',
    {
      schema: {
        summary: 'Clear one fault',
        operationId: 'adminDeleteFault',
        description: 'An unknown fault id is a 404.',
        params: FaultParams,
        response: { 204: Type.Null(), ...AdminErrorResponses },
      },
    },
    async (request, reply) => {
      if (!kit.faults.remove(await company(request.params.id), request.params.fault_id)) throw new NotFoundError('fault')
      return reply.code(204).send(null)
    },
  )
}
