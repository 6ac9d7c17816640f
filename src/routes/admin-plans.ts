import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import {
  calculationProblems,
  deletePlan,
  ExchangeRatesChangeSchema,
  ExchangeRatesSchema,
  listPlans,
  PlanChangeSchema,
  PlanDefinitionSchema,
  PlanProblemsSchema,
  replacementDefinition,
  ReplacementPlanSchema,
  savePlan,
  setExchangeRates,
} from '../admin/plans.ts'
import { FixturePlanSchema } from '../fixtures/schema.ts'
import { AdminErrorResponses, CompanyParamsSchema } from './schemas.ts'
import { ObjectIdSchema } from '../domain/schemas.ts'

/**
 * Plans and exchange rates of a company (registered inside the admin plugin, behind its token). A plan is read
 * and written in its definition form, the fixture's; every change recalculates what it touches before answering.
 */

const PlanParams = Type.Object({ id: ObjectIdSchema, plan_id: Type.String() })

export const adminPlanRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/companies/:id/plans',
    {
      schema: {
        summary: "The company's plans, as defined",
        operationId: 'adminListPlans',
        description: "Every plan of the company in its definition form (the fixture's), with its id.",
        params: CompanyParamsSchema,
        response: { 200: Type.Object({ data: Type.Array(PlanDefinitionSchema) }), ...AdminErrorResponses },
      },
    },
    async (request) => ({ data: await listPlans(app.store, request.params.id) }),
  )

  app.post(
    '/companies/:id/plans',
    {
      schema: {
        summary: 'Create a plan, and calculate it',
        operationId: 'adminCreatePlan',
        description: 'Checks the definition against the company (table, fields, quota, metrics), saves it and calculates every cell of it.',
        params: CompanyParamsSchema,
        body: FixturePlanSchema,
        response: { 201: PlanChangeSchema, ...AdminErrorResponses },
      },
    },
    async (request, reply) => reply.code(201).send(await savePlan(app.store, app.clock, request.params.id, request.body)),
  )

  app.put(
    '/companies/:id/plans/:plan_id',
    {
      schema: {
        summary: 'Replace a plan (its id stays), and calculate it again',
        operationId: 'adminReplacePlan',
        description: 'Replaces the definition and recalculates the plan; validated and paid statements stay as they are.',
        params: PlanParams,
        body: ReplacementPlanSchema,
        response: { 200: PlanChangeSchema, ...AdminErrorResponses },
      },
    },
    async (request) => {
      const definition = replacementDefinition(request.body, request.params.plan_id)
      return savePlan(app.store, app.clock, request.params.id, definition, request.params.plan_id)
    },
  )

  app.delete(
    '/companies/:id/plans/:plan_id',
    {
      schema: {
        summary: 'Delete a plan and its pending results (its validated and paid statements stay)',
        operationId: 'adminDeletePlan',
        description: 'Deletes the plan, its pending statements and their commission lines; frozen ones stay.',
        params: PlanParams,
        response: { 204: Type.Null(), ...AdminErrorResponses },
      },
    },
    async (request, reply) => {
      await deletePlan(app.store, request.params.id, request.params.plan_id)
      return reply.code(204).send(null)
    },
  )

  app.put(
    '/companies/:id/exchange-rates',
    {
      schema: {
        summary: "Replace the company's exchange rates, and recalculate every plan",
        operationId: 'adminSetExchangeRates',
        description: 'One unit of each currency in the default currency; every plan is recalculated with the new rates.',
        params: CompanyParamsSchema,
        body: ExchangeRatesSchema,
        response: {
          200: ExchangeRatesChangeSchema,
          ...AdminErrorResponses,
        },
      },
    },
    async (request) => setExchangeRates(app.store, app.clock, request.params.id, request.body),
  )

  app.get(
    '/companies/:id/calculation-problems',
    {
      schema: {
        summary: 'What keeps records or cells of each plan from being calculated (a dry run, nothing written)',
        operationId: 'adminCalculationProblems',
        description: 'Runs every plan on the current data without writing, and lists the records and cells it could not calculate.',
        params: CompanyParamsSchema,
        response: {
          200: Type.Object({
            data: Type.Array(PlanProblemsSchema),
          }),
          ...AdminErrorResponses,
        },
      },
    },
    async (request) => ({ data: await calculationProblems(app.store, request.params.id) }),
  )
}
