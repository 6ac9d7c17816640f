import { type Document, ObjectId } from 'bson'
import type { PlanResultSelection, RowWindow } from '../port.ts'
import { lookupId, lookupIds } from './codec.ts'

/**
 * The filters of the MongoDB adapter. Every filter on company data is built by `inCompany`, so each one names
 * the company: no query reads across companies, and on a cluster sharded by company each goes to one shard.
 */

/** Documents of one company that also match `conditions` (which cannot name another company). */
export function inCompany(companyId: string, conditions: Document = {}): Document {
  return { ...conditions, company_id: lookupId(companyId) }
}

/** The one document of the company with this id (none when the id is not an ObjectId). */
export function byId(companyId: string, id: string, conditions: Document = {}): Document {
  return inCompany(companyId, { ...conditions, _id: lookupId(id) })
}

/** The documents of one data table of the company (records, commission lines). */
export function inTable(companyId: string, tableId: string, conditions: Document = {}): Document {
  return inCompany(companyId, { table_id: lookupId(tableId), ...conditions })
}

/**
 * The cursor of a v2 page as an ObjectId. Ids are compared as ObjectIds, whose order is the order of their
 * hex text, so upper-case hex is read as the same id; anything else is a programming error above the port
 * (routes answer 400 for a malformed `start_id`).
 */
export function cursorId(afterId: string): ObjectId {
  if (!/^[0-9a-fA-F]{24}$/.test(afterId)) throw new TypeError(`not an ObjectId: ${JSON.stringify(afterId)}`)
  return ObjectId.createFromHexString(afterId.toLowerCase())
}

/**
 * The rows of one sequence of the company (an environment's statements, a table's lines, a quota's values)
 * inside a v2 window: after the cursor, within the modification-time bounds. Times are ISO strings with
 * milliseconds, so comparing their text compares the instants, as in the SQLite adapter. Sort by `_id` and
 * limit to `window.limit` with it.
 */
export function pageFilter(companyId: string, sequence: Document, window: RowWindow): Document {
  const filter = inCompany(companyId, sequence)
  if (window.afterId !== undefined) filter._id = { $gt: cursorId(window.afterId) }
  const modified: Document = {}
  if (window.modifiedAfter) modified[window.modifiedAfter.inclusive ? '$gte' : '$gt'] = window.modifiedAfter.at
  if (window.modifiedBefore) modified[window.modifiedBefore.inclusive ? '$lte' : '$lt'] = window.modifiedBefore.at
  if (Object.keys(modified).length > 0) filter.modified_at = modified
  return filter
}

/**
 * The `plan_id` of a calculated statement or line (the others hold null): the filter expression of the partial index
 * `company_plan_cell` (indexes.ts). MongoDB uses a partial index only for a query that states its filter expression:
 * an equality on `plan_id` alone does not, so every query meant for that index names this condition too.
 */
export const CALCULATED_PLAN_ID: Document = { $type: 'objectId' }

/** The filter of a plan's results (statements or lines), limited to some cells or to every period of some users when asked. */
export function ofPlan(companyId: string, planId: string, only: PlanResultSelection | undefined): Document {
  const filter = inCompany(companyId, { plan_id: { $eq: lookupId(planId), ...CALCULATED_PLAN_ID } })
  if (!only) return filter
  const any: Document[] = []
  if (only.cells && only.cells.length > 0) {
    any.push(...only.cells.map((cell) => ({ user_id: lookupId(cell.user_id), period: cell.period })))
  }
  if (only.userIds && only.userIds.length > 0) any.push({ user_id: { $in: lookupIds(only.userIds) } })
  // Asked for no cell and no user: it must match nothing, not everything.
  filter.$or = any.length > 0 ? any : [{ _id: { $exists: false } }]
  return filter
}
