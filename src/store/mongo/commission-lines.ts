import { ownValue } from '../../domain/stored-values.ts'
import type { CommissionLine } from '../model.ts'
import type { CommissionLineRepository, LineFigures } from '../port.ts'
import { lookupId } from './codec.ts'
import { COMMISSION_LINES } from './collections.ts'
import type { MongoContext } from './context.ts'
import { lineCurrencies } from './currencies.ts'
import { byId, inCompany, inTable, ofPlan, pageFilter } from './filters.ts'
import { countAll, deleteByIds, findAll, findFirst, findOne, insertAll, replaceOwnById, writeAll } from './operations.ts'

/** Commission lines; a plan's are found by cell through `company_plan_cell`. */
export function mongoCommissionLines(context: MongoContext): CommissionLineRepository {
  return {
    insertMany: (rows) => insertAll(context, COMMISSION_LINES, rows),
    page: (companyId, tableId, window) =>
      findFirst<CommissionLine>(context, COMMISSION_LINES, pageFilter(companyId, { table_id: lookupId(tableId) }, window), window.limit),
    list: (companyId, tableId, window) => findAll<CommissionLine>(context, COMMISSION_LINES, inTable(companyId, tableId), window),
    count: (companyId, tableId) => countAll(context, COMMISSION_LINES, inTable(companyId, tableId)),
    currenciesInUse: (companyId, tableId) => lineCurrencies(context, COMMISSION_LINES, inTable(companyId, tableId)),
    save: (lines) =>
      lines.length === 0 ? Promise.resolve() : writeAll(context, COMMISSION_LINES, replaceOwnById(COMMISSION_LINES, lines)),
    deleteMany: (companyId, ids) => deleteByIds(context, COMMISSION_LINES, companyId, ids),
    findOfPlan: (companyId, planId, only) => findAll<CommissionLine>(context, COMMISSION_LINES, ofPlan(companyId, planId, only)),
    loadedNamed: async (companyId, environment, planName) =>
      (await findOne(context, COMMISSION_LINES, inCompany(companyId, { environment, plan: planName, plan_id: null }))) !== null,
    async figuresOfPlan(companyId, planId, cells, fields) {
      if (cells.length === 0) return []
      const amount = `record_values.${fields.amount}`
      const externalId = `record_values.${fields.externalId}`
      const projection = {
        record_id: 1,
        user_id: 1,
        period: 1,
        date: 1,
        plan: 1,
        commission: 1,
        currency: 1,
        metrics: 1,
        [amount]: 1,
        [externalId]: 1,
      }
      const lines = await findAll<CommissionLine>(context, COMMISSION_LINES, ofPlan(companyId, planId, { cells }), undefined, projection)
      return lines.map(({ record_values: values, ...line }) => ({
        ...(line as Omit<LineFigures, 'amount' | 'external_id'>),
        amount: values ? (ownValue(values, fields.amount) ?? null) : null,
        external_id: values ? (ownValue(values, fields.externalId) ?? null) : null,
      }))
    },
    reprice: (companyId, tableId, changes) =>
      writeAll(
        context,
        COMMISSION_LINES,
        changes.map(({ id, commission, currency, metrics, modified_at }) => ({
          updateOne: {
            filter: byId(companyId, id, { table_id: lookupId(tableId) }),
            update: { $set: { commission, currency, metrics, modified_at } },
          },
        })),
      ),
  }
}
