import type { QuotaValue } from '../model.ts'
import type { QuotaValueRepository } from '../port.ts'
import { lookupId } from './codec.ts'
import { QUOTA_VALUES } from './collections.ts'
import type { MongoContext } from './context.ts'
import { inCompany, pageFilter } from './filters.ts'
import { countAll, findAll, findFirst, insertAll } from './operations.ts'

/** Quota values; a unique index refuses a second value of one (quota, user, period). */
export function mongoQuotaValues(context: MongoContext): QuotaValueRepository {
  return {
    insertMany: (values) => insertAll(context, QUOTA_VALUES, values),
    page: (companyId, quotaId, window) =>
      findFirst<QuotaValue>(context, QUOTA_VALUES, pageFilter(companyId, { quota_id: lookupId(quotaId) }, window), window.limit),
    count: (companyId, quotaId) => countAll(context, QUOTA_VALUES, inCompany(companyId, { quota_id: lookupId(quotaId) })),
    findCells: (companyId, quotaId, cells) =>
      cells.length === 0
        ? Promise.resolve([])
        : findAll<QuotaValue>(
            context,
            QUOTA_VALUES,
            inCompany(companyId, {
              quota_id: lookupId(quotaId),
              $or: cells.map((cell) => ({ user_id: lookupId(cell.user_id), period: cell.period })),
            }),
          ),
  }
}
