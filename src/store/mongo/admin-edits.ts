import type { Document } from 'bson'
import type { AdminEditRepository } from '../admin-edits.ts'
import { definedChanges } from '../shared/defined-changes.ts'
import { type Codec, decode } from './codec.ts'
import { COMMISSION_LINES, CUSTOM_METRICS, QUOTA_VALUES, REPORTING_STRUCTURES, STATEMENTS } from './collections.ts'
import { byId } from './filters.ts'
import { call, collectionOf, inSession, type MongoContext } from './context.ts'

/**
 * Sets the given fields of one record of the company (and removes the `unset` ones) with one
 * `findOneAndUpdate`, atomic on its document, and answers the record as changed. Since driver 6,
 * `findOneAndUpdate` resolves with the document itself (or null) unless `includeResultMetadata` is set;
 * `returnDocument: 'after'` makes it the changed one.
 */
function update<T>(
  context: MongoContext,
  codec: Codec,
  companyId: string,
  id: string,
  changes: object,
  unset: Document = {},
): Promise<T | null> {
  return call(context, async (session) => {
    const document = await collectionOf(context, codec).findOneAndUpdate(
      byId(companyId, id),
      { $set: definedChanges(changes), ...(Object.keys(unset).length > 0 ? { $unset: unset } : {}) },
      { ...inSession(session), returnDocument: 'after' },
    )
    return document ? decode<T>(codec, document) : null
  })
}

export function mongoAdminEdits(context: MongoContext): AdminEditRepository {
  return {
    // A changed statement's rendering no longer shows it (src/v2/statement-texts.ts).
    updateStatement: (companyId, id, changes) => update(context, STATEMENTS, companyId, id, changes, { rendering: '' }),
    updateCommissionLine: (companyId, id, changes) => update(context, COMMISSION_LINES, companyId, id, changes),
    updateQuotaValue: (companyId, id, changes) => update(context, QUOTA_VALUES, companyId, id, changes),
    updateStructure: (companyId, id, changes) => update(context, REPORTING_STRUCTURES, companyId, id, changes),
    updateMetric: (companyId, id, changes) => update(context, CUSTOM_METRICS, companyId, id, changes),
  }
}
