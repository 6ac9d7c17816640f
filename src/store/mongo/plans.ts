import type { Plan } from '../model.ts'
import type { PlanRepository } from '../port.ts'
import { PLANS } from './collections.ts'
import { call, collectionOf, inSession, type MongoContext } from './context.ts'
import { byId, inCompany } from './filters.ts'
import { findAll, findOne, replaceOwnById, writeAll } from './operations.ts'

/** Plans; a unique index keeps a name once per environment. */
export function mongoPlans(context: MongoContext): PlanRepository {
  return {
    save: (plans) => (plans.length === 0 ? Promise.resolve() : writeAll(context, PLANS, replaceOwnById(PLANS, plans))),
    get: (companyId, id) => findOne<Plan>(context, PLANS, byId(companyId, id)),
    list: (companyId) => findAll<Plan>(context, PLANS, inCompany(companyId)),
    delete: (companyId, id) =>
      call(
        context,
        async (session) => (await collectionOf(context, PLANS).deleteOne(byId(companyId, id), inSession(session))).deletedCount > 0,
      ),
  }
}
