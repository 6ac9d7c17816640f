import { calculatePlan, type CalculationProblem, userDirectory } from '../calculation/engine.ts'
import { companySettings, type RecalculationSummary, recalculate } from '../calculation/recalculation.ts'
import type { Clock } from '../clock.ts'
import { isCurrencyCode } from '../domain/formats.ts'
import { type Issue, NotFoundError, ValidationError } from '../errors.ts'
import { resolvePlan } from '../fixtures/plan-definitions.ts'
import type { FixturePlan } from '../fixtures/schema.ts'
import { isObjectId, newId } from '../ids.ts'
import type { Company, ExchangeRates, Plan } from '../store/model.ts'
import { type Store, StoreConflictError } from '../store/port.ts'

/**
 * Plans and exchange rates of a company, shared by the CLI and the /admin routes: each change is saved and the
 * results it touches recalculated in one transaction, and answers with what the recalculation did.
 */

export interface PlanChange {
  plan: Plan
  calculation: RecalculationSummary
}

async function requireCompany(store: Store, companyId: string): Promise<Company> {
  const company = await store.companies.get(companyId)
  if (!company) throw new NotFoundError('company')
  return company
}

/** Ids as stored (lower case); a malformed id names nothing. */
const storedId = (id: string) => (isObjectId(id.toLowerCase()) ? id.toLowerCase() : '')

/**
 * Creates a plan, or replaces the plan with id `planId` (keeping its id and creation time), and recalculates
 * every cell of it. A plan's name is unique in its environment.
 */
export async function savePlan(store: Store, clock: Clock, companyId: string, input: FixturePlan, planId?: string): Promise<PlanChange> {
  await requireCompany(store, companyId)
  const now = clock.now().toISOString()
  try {
    return await store.transaction(async (tx) => {
      const existing = planId === undefined ? null : await tx.plans.get(companyId, storedId(planId))
      if (planId !== undefined && !existing) throw new NotFoundError('plan', `No plan with id ${planId} in this company`)
      const [tables, quotas, metrics] = await Promise.all([tx.dataTables.list(companyId), tx.quotas.list(companyId), tx.metrics.list(companyId)])
      const issues: Issue[] = []
      const identity = { id: existing?.id ?? newId(), created_at: existing?.created_at ?? now, modified_at: now }
      const plan = resolvePlan(input, { companyId, tables, quotas, metrics }, identity, '', (resource, description) =>
        issues.push({ resource: resource.replace(/^\//, '') || 'body', description }),
      )
      if (issues.length > 0) throw new ValidationError(issues)
      await tx.plans.save([plan])
      return { plan, calculation: await recalculate(tx, companyId, { plans: new Set([plan.id]) }, { now }) }
    }, { company: companyId })
  } catch (error) {
    if (error instanceof StoreConflictError) throw new ValidationError({ resource: 'name', description: `a plan named ${input.name} exists already` })
    throw error
  }
}

/** Deletes a plan with its pending results; its validated and paid statements (and their lines) stay. */
export async function deletePlan(store: Store, companyId: string, planId: string): Promise<void> {
  await requireCompany(store, companyId)
  await store.transaction(async (tx) => {
    const id = storedId(planId)
    if (!(await tx.plans.get(companyId, id))) throw new NotFoundError('plan', `No plan with id ${planId} in this company`)
    const statements = await tx.statements.findOfPlan(companyId, id)
    const kept = new Set(statements.filter((statement) => statement.status !== 'pending').map((statement) => `${statement.user_id}|${statement.period}`))
    const lines = await tx.commissionLines.findOfPlan(companyId, id)
    await tx.commissionLines.deleteMany(companyId, lines.filter((line) => !kept.has(`${line.user_id}|${line.period}`)).map((line) => line.id))
    await tx.statements.deleteMany(companyId, statements.filter((statement) => statement.status === 'pending').map((statement) => statement.id))
    await tx.plans.delete(companyId, id)
  }, { company: companyId })
}

export async function listPlans(store: Store, companyId: string): Promise<Plan[]> {
  await requireCompany(store, companyId)
  return store.plans.list(companyId)
}

/** Replaces the company's exchange rates and recalculates every plan with them. */
export async function setExchangeRates(store: Store, clock: Clock, companyId: string, rates: ExchangeRates): Promise<{ exchange_rates: ExchangeRates; calculation: RecalculationSummary }> {
  const company = await requireCompany(store, companyId)
  const issues: Issue[] = []
  for (const [currency, rate] of Object.entries(rates)) {
    if (!isCurrencyCode(currency)) issues.push({ resource: 'exchange_rates', description: `${currency} is not a currency code such as USD` })
    else if (!(typeof rate === 'number' && Number.isFinite(rate) && rate > 0)) issues.push({ resource: currency, description: 'a rate is a positive number' })
    else if (currency === company.default_currency && rate !== 1) issues.push({ resource: currency, description: `${currency} is the default currency: its rate is 1` })
  }
  if (issues.length > 0) throw new ValidationError(issues)
  const now = clock.now().toISOString()
  return store.transaction(async (tx) => {
    await tx.companies.setExchangeRates(companyId, rates)
    return { exchange_rates: rates, calculation: await recalculate(tx, companyId, { everything: true }, { now }) }
  }, { company: companyId })
}

/** What keeps records or cells of each plan from being calculated now: a dry run of every plan, nothing written. */
export async function calculationProblems(store: Store, companyId: string): Promise<Array<{ plan_id: string; plan: string; problems: CalculationProblem[] }>> {
  const company = await requireCompany(store, companyId)
  const users = userDirectory(await store.users.list(companyId, { offset: 0, limit: Number.MAX_SAFE_INTEGER }))
  const report = []
  for (const plan of await store.plans.list(companyId)) {
    const records = await store.records.list(companyId, plan.table_id, { offset: 0, limit: Number.MAX_SAFE_INTEGER })
    const quota = plan.quota_id ? await store.quotas.get(companyId, plan.quota_id) : null
    const values = quota ? await store.quotaValues.page(companyId, quota.id, { limit: Number.MAX_SAFE_INTEGER }) : []
    const quotaValues = new Map(values.map((value) => [`${value.user_id}|${value.period}`, value.value]))
    const { problems } = calculatePlan({ plan, records, users, quota, quotaValues }, companySettings(company))
    report.push({ plan_id: plan.id, plan: plan.name, problems })
  }
  return report
}
