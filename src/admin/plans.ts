import { type Static, Type } from 'typebox'
import { calculatePlan, userDirectory } from '../calculation/engine.ts'
import { exchangeRateProblems } from '../calculation/exchange-rates.ts'
import { companySettings, type RecalculationSummary, recalculate, stampedBy } from '../calculation/recalculation.ts'
import { type CalculationProblem, CalculationProblemSchema, RecalculationSummarySchema } from '../calculation/schemas.ts'
import type { Clock } from '../clock.ts'
import { isCurrencyCode } from '../domain/formats.ts'
import { isPeriodOf } from '../domain/periods.ts'
import { storedId } from '../domain/ids.ts'
import { type Issue, NotFoundError, ValidationError } from '../errors.ts'
import { describePlan, resolveFilters, resolvePlan } from '../fixtures/plan-definitions.ts'
import { type FixturePlan, FixturePlanSchema } from '../fixtures/schema.ts'
import { newId } from '../ids.ts'
import type { DataTable, Environment, ExchangeRates, Plan, PlanFilter, Statement } from '../store/model.ts'
import { type Store, StoreConflictError } from '../store/port.ts'
import { existingCompany } from './company-admin.ts'

/**
 * Plans and exchange rates of a company, shared by the CLI and the /admin routes: each change is saved and the
 * results it touches recalculated in one transaction, and answers with what the recalculation did. Plans are
 * answered in their definition form, the fixture's, with their ids.
 */

/** A plan as it is defined (the fixture's form: tables and quotas by name), with its id. */
export const PlanDefinitionSchema = Type.Object({ id: Type.String(), ...FixturePlanSchema.properties }, { additionalProperties: false })
export type PlanDefinition = Static<typeof PlanDefinitionSchema>

/** A replacement may keep the `id` that `GET …/plans` shows, so that a plan read can be sent back as it is. */
export const ReplacementPlanSchema = Type.Object(
  { ...FixturePlanSchema.properties, id: Type.Optional(Type.String({ description: "The plan's id, as the path names it" })) },
  { additionalProperties: false },
)
export type ReplacementPlan = Static<typeof ReplacementPlanSchema>

/** The definition a replacement of plan `planId` gives: its `id`, when it keeps one, must be that plan's. */
export function replacementDefinition(replacement: ReplacementPlan, planId: string): FixturePlan {
  const { id, ...definition } = replacement
  if (id !== undefined && storedId(id) !== storedId(planId))
    throw new ValidationError({ resource: 'id', description: "a plan's id does not change: give the one the path names, or none" })
  return definition
}

/** A plan as saved, and what recalculating it did. */
export const PlanChangeSchema = Type.Object({ plan: PlanDefinitionSchema, calculation: RecalculationSummarySchema })
export type PlanChange = Static<typeof PlanChangeSchema>

/** A company's exchange rates as they are given: what one unit of each currency is worth in its default currency. */
export const ExchangeRatesSchema = Type.Record(Type.String({ pattern: '^[A-Z]{3}$' }), Type.Number({ exclusiveMinimum: 0 }), {
  additionalProperties: false,
  description: 'what one unit of each currency is worth in the default currency',
})

/** The exchange rates as saved, and what recalculating every plan with them did. */
export const ExchangeRatesChangeSchema = Type.Object({ exchange_rates: ExchangeRatesSchema, calculation: RecalculationSummarySchema })
export type ExchangeRatesChange = Static<typeof ExchangeRatesChangeSchema>

/** Plans in their definition form. */
async function described(store: Store, companyId: string, plans: readonly Plan[]): Promise<PlanDefinition[]> {
  const [tables, quotas] = await Promise.all([store.dataTables.list(companyId), store.quotas.list(companyId)])
  return plans.map((plan) => describePlan(plan, { tables, quotas }))
}

const planNotFound = (planId: string) => new NotFoundError('plan', `No plan with id ${planId} in this company`)

/**
 * Creates a plan, or replaces the plan with id `planId` (keeping its id and creation time), and recalculates
 * every cell of it. A plan's name is unique in its environment.
 */
export async function savePlan(store: Store, clock: Clock, companyId: string, input: FixturePlan, planId?: string): Promise<PlanChange> {
  const company = await existingCompany(store, companyId)
  try {
    const change = await store.transaction(
      async (tx) => {
        // Deleted since it was found (another instance, the CLI): a 404, not a plan refused for its table, now gone.
        await existingCompany(tx, company.id)
        // The time once the transaction holds the store (see archiveUsers).
        const timing = await stampedBy(clock, tx)
        const { now } = timing
        const id = planId === undefined ? null : storedId(planId)
        const existing = id ? await tx.plans.get(company.id, id) : null
        if (planId !== undefined && !existing) throw planNotFound(planId)
        const [tables, quotas, metrics] = await Promise.all([
          tx.dataTables.list(company.id),
          tx.quotas.list(company.id),
          tx.metrics.list(company.id),
        ])
        const issues: Issue[] = []
        const environment = input.environment ?? 'live'
        // Who states results under the name the plan takes, when it takes one (created, renamed or moved): read once,
        // for its identity and the refusals below.
        const named =
          existing?.name === input.name && existing.environment === environment
            ? null
            : await plansStatedUnder(tx, company.id, environment, input.name)
        const identity = {
          id: existing?.id ?? named?.deleted ?? newId(),
          created_at: existing?.created_at ?? now,
          modified_at: now,
        }
        const plan = resolvePlan(input, { companyId: company.id, tables, quotas, metrics }, identity, '', (resource, description) =>
          issues.push({ resource: resource.replace(/^\//, '') || 'body', description }),
        )
        if (issues.length > 0) throw new ValidationError(issues)
        // A replacement that keeps its frequency is never refused for it (a store may hold a plan whose frequency an
        // earlier version let change under its frozen cells); one created may take a deleted plan's frozen cells.
        if (existing?.frequency !== plan.frequency) await refuseFrequencyOfFrozenCells(tx, company.id, plan)
        if (existing && existing.environment !== plan.environment)
          await refuseEnvironmentOfFrozenCells(tx, company.id, plan, named?.deleted ?? null)
        // A replacement moved to another environment meets that environment's loaded results under its name.
        if (named) {
          await refuseNameOfLoadedResults(tx, company.id, plan)
          refuseNameOfResultsLeftBehind(plan, named.saved)
        }
        // Its lines are read by the table they were calculated from: those of the table it no longer reads would
        // never be found again, and a cell recalculated in part would count them as records.
        if (existing && existing.table_id !== plan.table_id) await deleteUnfrozenLines(tx, company.id, existing.id)
        await tx.plans.save([plan])
        return { plan, calculation: await recalculate(tx, company.id, { plans: new Set([plan.id]) }, timing) }
      },
      { company: company.id },
    )
    const [definition] = await described(store, company.id, [change.plan])
    return { plan: definition, calculation: change.calculation }
  } catch (error) {
    if (error instanceof StoreConflictError)
      throw new ValidationError({ resource: 'name', description: `a plan named ${input.name} exists already` })
    throw error
  }
}

/**
 * A plan is neither created, renamed nor moved to another environment under the name of results a fixture loaded
 * there (no plan calculated them): it would state their cells a second time beside them (docs/decisions.md, "A
 * fixture's loaded results never share a name with one of its plans").
 */
async function refuseNameOfLoadedResults(tx: Store, companyId: string, plan: Plan): Promise<void> {
  const [statements, lines] = await Promise.all([
    tx.statements.loadedNamed(companyId, plan.environment, plan.name),
    tx.commissionLines.loadedNamed(companyId, plan.environment, plan.name),
  ])
  if (!statements && !lines) return
  throw new ValidationError({
    error: 'ConflictError',
    resource: 'name',
    description: `results a fixture loaded are stated under the name ${plan.name}: a plan of that name would state their periods a second time; give it another name`,
  })
}

/**
 * A plan is neither created, renamed nor moved to another environment under the name of statements that a plan of the
 * other environment left there: a version before 2026-11-28 moved plans away from their validated and paid statements.
 * A plan of that name, another id, would state their periods a second time beside them; moving their plan back to
 * them (which `refuseEnvironmentOfFrozenCells` allows) puts them together again.
 */
function refuseNameOfResultsLeftBehind(plan: Plan, statingPlans: readonly Plan[]): void {
  const away = statingPlans.find((other) => other.id !== plan.id && other.environment !== plan.environment)
  if (!away) return
  throw new ValidationError({
    error: 'ConflictError',
    resource: 'name',
    description: `statements of plan ${away.name} (id ${away.id}), now of ${away.environment}, are stated under the name ${plan.name} in ${plan.environment}: a plan of that name would state their periods a second time; move that plan back to ${plan.environment} or delete it (a plan created then under the name takes them over), or give this one another name`,
  })
}

/**
 * A plan keeps the frequency of its validated and paid cells while they stay: of another frequency, it would state
 * the months of a paid quarter a second time, in cells of their own beside the frozen one (replaced, or created
 * again under a deleted plan's name).
 */
async function refuseFrequencyOfFrozenCells(tx: Store, companyId: string, plan: Plan): Promise<void> {
  const frozen = (await tx.statements.findOfPlan(companyId, plan.id)).find(
    (statement) => statement.status !== 'pending' && statement.period !== null && !isPeriodOf(plan.frequency, statement.period),
  )
  if (!frozen) return
  throw new ValidationError({
    error: 'ConflictError',
    resource: 'frequency',
    description: `the plan's ${frozen.status} statements are of another frequency (period ${frozen.period}): a plan keeps its frequency while they stay; give a plan of another frequency another name`,
  })
}

/**
 * A plan keeps the environment of its validated and paid cells while they stay: they would stay where they are, under
 * a plan of the other environment, and a plan created there under its name (a new id, the name being free) would
 * state their periods a second time beside them. Only those outside the plan's new environment count: a plan that a
 * version before 2026-11-28 moved away from them may move back to them. Nor does it move where a deleted plan left
 * validated and paid statements under its name: it would state their periods a second time beside them.
 */
async function refuseEnvironmentOfFrozenCells(tx: Store, companyId: string, plan: Plan, deletedPlanId: string | null): Promise<void> {
  const frozen = (await tx.statements.findOfPlan(companyId, plan.id)).find(
    (statement) => statement.status !== 'pending' && statement.environment !== plan.environment,
  )
  if (frozen) {
    throw new ValidationError({
      error: 'ConflictError',
      resource: 'environment',
      description: `the plan's ${frozen.status} statements are of ${frozen.environment} (period ${frozen.period}): a plan stays in the environment of its validated and paid statements while they stay; create a plan in ${plan.environment} instead`,
    })
  }
  // Created there under its name, a plan would take the deleted plan's id and its frozen cells; moved, it keeps its own.
  if (!deletedPlanId) return
  throw new ValidationError({
    error: 'ConflictError',
    resource: 'environment',
    description: `validated or paid statements of a deleted plan named ${plan.name} are in ${plan.environment}: moved there, the plan would state their periods a second time; delete it and create it in ${plan.environment} (it takes them over), or give it another name`,
  })
}

/**
 * The plans whose statements in `environment` are stated under `name`: those saved, and the latest deleted one, whose
 * validated and paid results stay. A plan created under the name takes the deleted one's id, so that those cells stay
 * frozen as they would for a plan replaced, rather than being stated a second time beside them (docs/decisions.md, "A
 * plan deleted and created again").
 */
async function plansStatedUnder(
  tx: Store,
  companyId: string,
  environment: Environment,
  name: string,
): Promise<{ saved: Plan[]; deleted: string | null }> {
  const [named, plans] = await Promise.all([tx.statements.planIdsNamed(companyId, environment, name), tx.plans.list(companyId)])
  const savedIds = new Set(plans.map((plan) => plan.id))
  const stating = new Set(named)
  return {
    saved: plans.filter((plan) => stating.has(plan.id)),
    deleted: named.filter((planId) => !savedIds.has(planId)).at(-1) ?? null,
  }
}

/** Deletes a plan with its pending results; its validated and paid statements (and their lines) stay. Answers its id as stored. */
export async function deletePlan(store: Store, companyId: string, planId: string): Promise<string> {
  const company = await existingCompany(store, companyId)
  return store.transaction(
    async (tx) => {
      // Deleted since it was found, its rows not yet swept on MongoDB (see reviseStatement): a 404, not a 204.
      await existingCompany(tx, company.id)
      const id = storedId(planId)
      if (!id || !(await tx.plans.get(company.id, id))) throw planNotFound(planId)
      const statements = await deleteUnfrozenLines(tx, company.id, id)
      await tx.statements.deleteMany(
        company.id,
        statements.filter((statement) => statement.status === 'pending').map((statement) => statement.id),
      )
      await tx.plans.delete(company.id, id)
      return id
    },
    { company: company.id },
  )
}

/** Deletes a plan's lines but those of its validated and paid cells, which keep what they state; answers its statements. */
async function deleteUnfrozenLines(tx: Store, companyId: string, planId: string): Promise<Statement[]> {
  const statements = await tx.statements.findOfPlan(companyId, planId)
  const kept = new Set(
    statements.filter((statement) => statement.status !== 'pending').map((statement) => `${statement.user_id}|${statement.period}`),
  )
  const lines = await tx.commissionLines.findOfPlan(companyId, planId)
  await tx.commissionLines.deleteMany(
    companyId,
    lines.filter((line) => !kept.has(`${line.user_id}|${line.period}`)).map((line) => line.id),
  )
  return statements
}

export async function listPlans(store: Store, companyId: string): Promise<PlanDefinition[]> {
  const company = await existingCompany(store, companyId)
  return described(store, company.id, await store.plans.list(company.id))
}

/** Replaces the company's exchange rates and recalculates every plan with them. */
export async function setExchangeRates(store: Store, clock: Clock, companyId: string, rates: ExchangeRates): Promise<ExchangeRatesChange> {
  const company = await existingCompany(store, companyId)
  const issues: Issue[] = exchangeRateProblems(rates, company.default_currency).map(({ currency, description }) => ({
    resource: isCurrencyCode(currency) ? currency : 'exchange_rates',
    description,
  }))
  if (issues.length > 0) throw new ValidationError(issues)
  return store.transaction(
    async (tx) => {
      // Deleted since it was found: nothing was stored, which a 200 would say was.
      if (!(await tx.companies.setExchangeRates(company.id, rates))) throw new NotFoundError('company')
      // The time once the transaction holds the store (see archiveUsers).
      return { exchange_rates: rates, calculation: await recalculate(tx, company.id, { everything: true }, await stampedBy(clock, tx)) }
    },
    { company: company.id },
  )
}

/** A full recalculation a migration left due, as it went: what it wrote, or why it failed (it stays due then). */
export type DueRecalculation = { company_id: string; reason: string } & ({ calculation: RecalculationSummary } | { failure: unknown })

/**
 * Runs the full recalculations a migration left due (`recalculationsDue`), each in one transaction with its taking
 * off the list, so that processes started together on one store run each once; one that fails stays due, and the
 * others are run. Returns those this process ran or failed (not those another process ran meanwhile).
 */
export async function recalculateDueCompanies(store: Store, clock: Clock): Promise<DueRecalculation[]> {
  const outcomes: DueRecalculation[] = []
  for (const { company_id: companyId, reason } of await store.companies.recalculationsDue()) {
    try {
      const calculation = await store.transaction(
        async (tx) =>
          (await tx.companies.takeRecalculationDue(companyId))
            ? recalculate(tx, companyId, { everything: true }, await stampedBy(clock, tx))
            : null,
        { company: companyId },
      )
      if (calculation) outcomes.push({ company_id: companyId, reason, calculation })
    } catch (failure) {
      // Another process held the store for it, and may have run it meanwhile: a failure only while it is still due.
      const stillDue = (await store.companies.recalculationsDue()).some((due) => due.company_id === companyId)
      if (stillDue) outcomes.push({ company_id: companyId, reason, failure })
    }
  }
  return outcomes
}

/** The problems of one plan in a dry run. */
export const PlanProblemsSchema = Type.Object({
  plan_id: Type.String(),
  plan: Type.String(),
  problems: Type.Array(CalculationProblemSchema),
})
export type PlanProblems = Static<typeof PlanProblemsSchema>

/** What keeps records or cells of each plan from being calculated now: a dry run of every plan, nothing written. */
export async function calculationProblems(store: Store, companyId: string): Promise<PlanProblems[]> {
  const company = await existingCompany(store, companyId)
  const users = userDirectory(await store.users.list(company.id, { offset: 0, limit: Number.MAX_SAFE_INTEGER }))
  const tables = await store.dataTables.list(company.id)
  const report = []
  for (const plan of await store.plans.list(company.id)) {
    const records = await store.records.list(company.id, plan.table_id, { offset: 0, limit: Number.MAX_SAFE_INTEGER })
    const quota = plan.quota_id ? await store.quotas.get(company.id, plan.quota_id) : null
    const values = quota ? await store.quotaValues.page(company.id, quota.id, { limit: Number.MAX_SAFE_INTEGER }) : []
    const quotaValues = new Map(values.map((value) => [`${value.user_id}|${value.period}`, value.value]))
    const { problems } = calculatePlan({ plan, records, users, quota, quotaValues }, companySettings(company))
    report.push({ plan_id: plan.id, plan: plan.name, problems: [...definitionProblems(plan, tables), ...problems] })
  }
  return report
}

const filterValues = (filter: PlanFilter): string[] => ('in' in filter ? filter.in : [filter.contains])

/**
 * What the rules of this version refuse or read otherwise in the filters of a plan an earlier version saved (an `in`
 * filter on an amount field, taken before 2026-11-28; a filter's value saved as written, before 2026-11-29): such a
 * filter never held, and the plan stated nothing of it. Such a plan is calculated as it is, and a dry run says why its
 * results are not what its definition reads as, and that a replacement (`PUT`) puts it right. Only the filters, read
 * by the table the plan reads: what else a definition is checked for may change after a save (a quota's type, which
 * the calculation names in each cell it gives no target), and no replacement would put that right.
 */
function definitionProblems(plan: Plan, tables: readonly DataTable[]): CalculationProblem[] {
  const table = tables.find((candidate) => candidate.id === plan.table_id)
  if (!table) return []
  const problems: string[] = []
  const resolved = resolveFilters(plan.filters, table, 'filters', (resource, description) => problems.push(`${resource}: ${description}`))
  // Saved as written before 2026-11-29 (`1.50`, a date-time without its milliseconds), a filter's value never held.
  plan.filters.forEach((filter, index) => {
    const taken = filterValues(resolved[index])
    filterValues(filter).forEach((value, at) => {
      if (taken[at] === value) return
      const where = 'in' in filter ? `filters/${index}/in/${at}` : `filters/${index}/contains`
      problems.push(
        `${where}: ${JSON.stringify(value)} is compared as written, and no value of ${filter.field} reads so; this version takes it as ${JSON.stringify(taken[at])}`,
      )
    })
  })
  return problems.map((problem) => ({
    plan: plan.name,
    message: `its definition, ${problem}; the plan is calculated as it was saved until a replacement (PUT) puts this right`,
  }))
}
