import type { Document } from 'bson'
import type { CommissionLine, Plan, Statement } from '../model.ts'
import type { CalculationScope, CommissionLineRepository, LineFigures, PlanRepository, StatementRepository } from '../port.ts'
import { type Codec, lookupId, lookupIds } from './codec.ts'
import { COMMISSION_LINES, PLANS, STATEMENTS } from './collections.ts'
import { byId, inCompany } from './filters.ts'
import { replaceById } from './repositories.ts'
import { atomically, call, collectionOf, findAll, findOne, inSession, type Scope, writeAll } from './scope.ts'

/**
 * What the calculation engine reads and writes (src/calculation/): plans, and the statements and lines they
 * produce, found by cell (plan, user, period) or by record through the partial `company_plan_cell` and
 * `company_record_calculated` indexes.
 */

type StatementResults = Pick<StatementRepository, 'save' | 'deleteMany' | 'findOfPlan'>
type LineResults = Pick<CommissionLineRepository, 'save' | 'deleteMany' | 'findOfPlan' | 'findByRecords' | 'figuresOfPlan' | 'reprice'>

/** The filter of a plan's results within a scope: whole cells, or every period of some users. */
function ofPlan(companyId: string, planId: string, only: CalculationScope | undefined): Document {
  const filter = inCompany(companyId, { plan_id: lookupId(planId) })
  if (!only) return filter
  const any: Document[] = []
  if (only.cells && only.cells.length > 0) {
    any.push(...only.cells.map((cell) => ({ user_id: lookupId(cell.user_id), period: cell.period })))
  }
  if (only.userIds && only.userIds.length > 0) any.push({ user_id: { $in: lookupIds(only.userIds) } })
  // An empty scope names no cell: it must match nothing, not everything.
  filter.$or = any.length > 0 ? any : [{ _id: { $exists: false } }]
  return filter
}

/** A statement's rendering is kept beside it (`rendering`): replacing the document drops it, as the port says. */
const WITHOUT_RENDERING: Document = { rendering: 0 }

export function mongoStatementResults(scope: Scope): StatementResults {
  return {
    save: (statements: Statement[]) =>
      statements.length === 0 ? Promise.resolve() : writeAll(scope, STATEMENTS, replaceById(STATEMENTS, statements[0].company_id, statements)),
    deleteMany: (companyId, ids) => deleteById(scope, STATEMENTS, companyId, ids),
    findOfPlan: (companyId, planId, only) => findAll<Statement>(scope, STATEMENTS, ofPlan(companyId, planId, only), undefined, WITHOUT_RENDERING),
  }
}

export function mongoLineResults(scope: Scope): LineResults {
  return {
    save: (lines: CommissionLine[]) =>
      lines.length === 0 ? Promise.resolve() : writeAll(scope, COMMISSION_LINES, replaceById(COMMISSION_LINES, lines[0].company_id, lines)),
    deleteMany: (companyId, ids) => deleteById(scope, COMMISSION_LINES, companyId, ids),
    findOfPlan: (companyId, planId, only) => findAll<CommissionLine>(scope, COMMISSION_LINES, ofPlan(companyId, planId, only)),
    async figuresOfPlan(companyId, planId, cells, fields) {
      if (cells.length === 0) return []
      const amount = `record_values.${fields.amount}`
      const externalId = `record_values.${fields.externalId}`
      const projection = { record_id: 1, user_id: 1, period: 1, date: 1, plan: 1, commission: 1, currency: 1, metrics: 1, [amount]: 1, [externalId]: 1 }
      const lines = await findAll<CommissionLine>(scope, COMMISSION_LINES, ofPlan(companyId, planId, { cells }), undefined, projection)
      return lines.map(({ record_values: values, ...line }) => ({
        ...(line as Omit<LineFigures, 'amount' | 'external_id'>),
        amount: values?.[fields.amount] ?? null,
        external_id: values?.[fields.externalId] ?? null,
      }))
    },
    reprice: (companyId, tableId, changes) =>
      writeAll(
        scope,
        COMMISSION_LINES,
        changes.map(({ id, commission, currency, metrics, modified_at }) => ({
          updateOne: { filter: byId(companyId, id, { table_id: lookupId(tableId) }), update: { $set: { commission, currency, metrics, modified_at } } },
        })),
      ),
    findByRecords: (companyId, recordIds) =>
      recordIds.length === 0
        ? Promise.resolve([])
        : findAll<CommissionLine>(scope, COMMISSION_LINES, inCompany(companyId, { record_id: { $in: lookupIds(recordIds) }, plan_id: { $type: 'objectId' } })),
  }
}

/** Deletes by id in one `deleteMany`, run in a transaction (the caller's, or its own): one such call is not atomic alone. */
async function deleteById(scope: Scope, codec: Codec, companyId: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return
  await atomically(scope, (session) => collectionOf(scope, codec).deleteMany(inCompany(companyId, { _id: { $in: lookupIds(ids) } }), inSession(session)))
}

export function mongoPlans(scope: Scope): PlanRepository {
  return {
    save: (plans) => (plans.length === 0 ? Promise.resolve() : writeAll(scope, PLANS, replaceById(PLANS, plans[0].company_id, plans))),
    get: (companyId, id) => findOne<Plan>(scope, PLANS, byId(companyId, id)),
    list: (companyId) => findAll<Plan>(scope, PLANS, inCompany(companyId)),
    delete: (companyId, id) =>
      call(scope, async (session) => (await collectionOf(scope, PLANS).deleteOne(byId(companyId, id), inSession(session))).deletedCount > 0),
  }
}
