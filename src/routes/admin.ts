import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { companyInventory, createCompanyKey, deleteCompany, revokeCompanyKey } from '../admin/company-admin.ts'
import { storedId } from '../domain/ids.ts'
import { ObjectIdSchema } from '../domain/schemas.ts'
import { NotFoundError, ServiceUnavailableError, UnauthorizedError } from '../errors.ts'
import { loadFixture } from '../fixtures/load-fixture.ts'
import { adminClockRoutes } from './admin-clock.ts'
import { adminFaultRoutes } from './admin-faults.ts'
import { adminImportRoutes } from './admin-imports.ts'
import { adminPlanRoutes } from './admin-plans.ts'
import { adminRequestRoutes } from './admin-requests.ts'
import { adminResetRoutes } from './admin-reset.ts'
import { adminEditRoutes } from './admin-edits.ts'
import type { WorkerProbe } from './health.ts'
import { keepOutOfCaches } from './no-store.ts'
import {
  AdminErrorResponses,
  CompanyParamsSchema,
  missingBodyAsEmpty,
  NoBodySchema,
  UnauthorizedBodySchema,
  ValidationErrorBodySchema,
} from './schemas.ts'

const digest = (text: string) => createHash('sha256').update(text).digest()
const BEARER = /^bearer[ \t]+(.+)$/i
const DELETION_CUT_BY_STOP =
  'This instance is stopping: the company is deleted, but not yet all of its data; send the deletion again to finish it (it answers 404 then)'

const CreatedCompanySchema = Type.Object({ company_id: Type.String(), api_key: Type.String() })
const CreatedKeySchema = Type.Object({ api_key: Type.String() })
const ApiKeyParamsSchema = Type.Object({ id: ObjectIdSchema, key_id: ObjectIdSchema })
const CompanySummarySchema = Type.Object({ id: Type.String(), name: Type.String(), public_api_enabled: Type.Boolean() })

const Environment = Type.Enum(['live', 'sandbox'])
const InventoryItemSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: Type.Enum(['statement_reporting', 'record_reporting', 'quota', 'data_table']),
  environment: Environment,
  /** Data tables only: the table API name (`data_table_key`). */
  key: Type.Optional(Type.String()),
  /** Quotas only. */
  status: Type.Optional(Type.String()),
  /** Statements, commission lines, quota values or records behind the item. */
  total_records: Type.Integer(),
})
const CompanyInventorySchema = Type.Object({
  company: Type.Object({
    id: Type.String(),
    name: Type.String(),
    public_api_enabled: Type.Boolean(),
    default_currency: Type.String(),
    fiscal_year_start_month: Type.Integer(),
  }),
  users: Type.Integer(),
  api_keys: Type.Array(Type.Object({ id: Type.String(), prefix: Type.String(), user_id: Type.String(), created_at: Type.String() })),
  structures: Type.Array(InventoryItemSchema),
  /** The plans, with the statements each calculated. */
  plans: Type.Array(
    Type.Object({
      id: Type.String(),
      name: Type.String(),
      environment: Environment,
      data_table: Type.String({ description: 'the key of the data table it reads' }),
      frequency: Type.String(),
      statements: Type.Integer(),
    }),
  ),
})

/**
 * Admin routes take only the query parameters they name: an unknown one is a 400 naming it, and nothing is done.
 * v1 and v2 ignore them (clients add their own); here a parameter meant to narrow an action (`POST
 * /admin/reset?company=…`, which resets every company) must not be dropped in silence.
 */
function refuseUnknownQueryParameters(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const schema = (route.schema ??= {})
    const query = (schema.querystring ?? Type.Object({})) as Record<string, unknown>
    schema.querystring = { ...query, additionalProperties: false }
    // So every admin route can answer a 400, and the OpenAPI document says so.
    const responses = schema.response as Record<string, unknown> | undefined
    if (responses && responses['400'] === undefined) responses['400'] = ValidationErrorBodySchema
  })
}

/**
 * An admin deletion takes no body (or `{}`), as the drain and the resets: a field sent in one, such as an `id` meant to
 * clear one fault of `DELETE …/faults`, is a 400 naming it rather than ignored while the whole is deleted.
 */
function refuseBodiesOfDeletions(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (route.method !== 'DELETE') return
    const schema = (route.schema ??= {})
    schema.body ??= NoBodySchema
    route.preValidation = [route.preValidation ?? []].flat().concat(missingBodyAsEmpty)
  })
}

/**
 * The administration surface, registered only when ADMIN_TOKEN is set: every route expects
 * `Authorization: Bearer <ADMIN_TOKEN>`. Not part of the public interface.
 */
export const adminRoutes: FastifyPluginAsyncTypebox<{ worker?: WorkerProbe }> = async (app, { worker }) => {
  const expected = digest(app.config.adminToken ?? '')
  keepOutOfCaches(app)
  refuseUnknownQueryParameters(app)
  refuseBodiesOfDeletions(app)
  // A deletion in flight when the instance stops ends between two writes of its sweep, answered 503, rather than hold
  // the stop for the whole sweep (about a second per 150,000 records): the company is gone, and its mark left for the
  // next import worker, as the deletion sent again finishes it (404).
  const stopping = new AbortController()
  app.addHook('preClose', async () => {
    stopping.abort(new ServiceUnavailableError(DELETION_CUT_BY_STOP, 1))
  })
  app.addHook('onRequest', async (request) => {
    // The scheme's name is case-insensitive, and spaces or tabs may follow it (RFC 9110, 11.1 and 11.4).
    const presented = BEARER.exec(request.headers.authorization ?? '')?.[1]
    // Compare digests so that the comparison takes the same time whatever the presented length.
    if (presented === undefined || !timingSafeEqual(digest(presented), expected)) {
      throw new UnauthorizedError('Missing or invalid admin token: send Authorization: Bearer <ADMIN_TOKEN>')
    }
  })

  app.post(
    '/companies',
    {
      schema: {
        summary: 'Create a company from a fixture document',
        operationId: 'adminCreateCompany',
        description: 'The body is a fixture (docs/fixture.schema.json); every problem is listed with its JSON path.',
        body: Type.Unknown(),
        response: { 201: CreatedCompanySchema, ...AdminErrorResponses },
      },
    },
    async (request, reply) => {
      const loaded = await loadFixture(app.store, app.clock, request.body)
      return reply.code(201).send({ company_id: loaded.company_id, api_key: loaded.api_keys[0] })
    },
  )

  app.get(
    '/companies',
    {
      schema: {
        summary: 'The companies of the store',
        operationId: 'adminListCompanies',
        description: "Each company with its id, as the CLI's `companies` lists them: how a test finds the demo company's id.",
        response: { 200: Type.Object({ data: Type.Array(CompanySummarySchema) }), 401: UnauthorizedBodySchema },
      },
    },
    async () => ({
      data: (await app.store.companies.list()).map(({ id, name, public_api_enabled }) => ({ id, name, public_api_enabled })),
    }),
  )

  app.get(
    '/companies/:id',
    {
      schema: {
        summary: 'The inventory of a company, sandbox included',
        operationId: 'adminGetCompany',
        description: 'Settings, user count, keys (prefix only), every structure, quota and data table with its environment and row count.',
        params: CompanyParamsSchema,
        response: { 200: CompanyInventorySchema, ...AdminErrorResponses },
      },
    },
    async (request) => companyInventory(app.store, request.params.id),
  )

  app.delete(
    '/companies/:id',
    {
      schema: {
        summary: 'Delete a company and all its data',
        operationId: 'adminDeleteCompany',
        description: 'Deletes the company and everything it owns.',
        params: CompanyParamsSchema,
        response: { 204: Type.Null(), ...AdminErrorResponses },
      },
    },
    async (request, reply) => {
      // Its faults and journal go with it: they are kept in memory per company. Also on a 404: after a 503 (the company
      // gone, its rows not all), the deletion sent again finishes it and answers 404, and nothing else would drop them.
      try {
        forgetTestKitOf(app, await deleteCompany(app.store, request.params.id, stopping.signal))
      } catch (error) {
        const companyId = storedId(request.params.id)
        if (error instanceof NotFoundError && companyId) forgetTestKitOf(app, companyId)
        throw error
      }
      return reply.code(204).send(null)
    },
  )

  app.post(
    '/companies/:id/api-keys',
    {
      schema: {
        summary: 'Create an API key for a user of the company (its first active user by default)',
        operationId: 'adminCreateApiKey',
        description: 'The secret is answered once; only its hash is kept.',
        params: CompanyParamsSchema,
        body: Type.Object({ user: Type.Optional(Type.String()) }, { additionalProperties: false }),
        response: { 201: CreatedKeySchema, ...AdminErrorResponses },
      },
      preValidation: missingBodyAsEmpty,
    },
    async (request, reply) => {
      const secret = await createCompanyKey(app.store, app.clock, request.params.id, request.body.user)
      return reply.code(201).send({ api_key: secret })
    },
  )

  app.delete(
    '/companies/:id/api-keys/:key_id',
    {
      schema: {
        summary: 'Revoke an API key of the company',
        operationId: 'adminDeleteApiKey',
        description:
          'Deletes the key whose id the inventory lists: refused (401, as an unknown key) from the next request on this instance, within half a second on the others.',
        params: ApiKeyParamsSchema,
        response: { 204: Type.Null(), ...AdminErrorResponses },
      },
    },
    async (request, reply) => {
      await revokeCompanyKey(app.store, request.params.id, request.params.key_id)
      return reply.code(204).send(null)
    },
  )

  // Registered after the token hook, so that it guards these routes too.
  await app.register(adminEditRoutes)
  await app.register(adminPlanRoutes)
  // The test kit: the clock, imports, faults, the request journal, reset (docs/testing.md).
  const kit = app.testKit
  if (!kit) throw new Error('the admin routes need the test kit: registerTestKit comes first')
  await app.register(adminClockRoutes, { worker })
  await app.register(adminImportRoutes)
  await app.register(adminFaultRoutes, { kit })
  await app.register(adminRequestRoutes, { kit })
  await app.register(adminResetRoutes, { kit })
}

/** Drops a deleted company's faults and journal, which the test kit keeps in memory per company. */
function forgetTestKitOf(app: FastifyInstance, companyId: string): void {
  app.testKit?.faults.clear(companyId)
  app.testKit?.journal.forget(companyId)
}
