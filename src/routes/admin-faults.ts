import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { existingCompany } from '../admin/company-admin.ts'
import { NotFoundError } from '../errors.ts'
import { FAULT_STATUSES } from '../test-kit/faults.ts'
import type { TestKit } from './test-kit.ts'
import { AdminErrorResponses, CompanyParamsSchema } from './schemas.ts'
import { ObjectIdSchema, OrNull } from '../domain/schemas.ts'

const FaultParams = Type.Object({ id: ObjectIdSchema, fault_id: Type.String() })
const Status = Type.Enum([...FAULT_STATUSES], { description: 'Answer this status, with the body the specification gives it' })

const FaultDefinitionSchema = Type.Object(
  {
    method: Type.String({ description: 'GET, PUT, POST, DELETE, PATCH, or * for any' }),
    path: Type.String({
      description:
        'A path of the v1 or v2 interface; `*` stands for one segment: /v2/reporting/*/statements. Segments are compared percent-decoded',
    }),
    status: Type.Optional(Status),
    delay_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 600_000, description: 'Wait this long first (real milliseconds)' })),
    delay_max_ms: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 600_000, description: 'Wait a time drawn uniformly from delay_ms to this' }),
    ),
    drop: Type.Optional(Type.Boolean({ description: 'Close the connection without answering' })),
    times: Type.Optional(Type.Integer({ minimum: 1, description: 'Fire on the next N matching requests only' })),
    probability: Type.Optional(
      Type.Number({ exclusiveMinimum: 0, maximum: 1, description: 'Fire on this share of the matching requests, drawn from `seed`' }),
    ),
    seed: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 4_294_967_295, description: 'The seed of the draws (random when absent, and shown)' }),
    ),
    retry_after: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 3600, description: 'With status 429: the Retry-After, in seconds (default 1)' }),
    ),
  },
  { additionalProperties: false },
)
const FaultSchema = Type.Object({
  id: Type.String(),
  method: Type.String(),
  path: Type.String(),
  status: Type.Union([Status, Type.Null()]),
  delay_ms: OrNull(Type.Integer()),
  delay_max_ms: OrNull(Type.Integer()),
  drop: Type.Boolean(),
  times: OrNull(Type.Integer()),
  probability: Type.Union([Type.Number(), Type.Null()]),
  seed: Type.Integer(),
  retry_after: OrNull(Type.Integer()),
  fired: Type.Integer({ description: 'How many requests it fired on' }),
  created_at: Type.String(),
})

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
          'Matching requests (method, and a path whose `*` stands for one segment) answer `status` with its documented body (429 with Retry-After and the RateLimit-* headers), wait `delay_ms` (or a time drawn up to `delay_max_ms`) first (a request whose client gives up meanwhile is not served), or have their connection closed (`drop`): on every one, on the next `times`, or on a `probability` share drawn from `seed`. The first fault set that fires is the one applied.',
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
