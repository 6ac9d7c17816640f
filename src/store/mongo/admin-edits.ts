import type { Document } from 'bson'
import type { AdminEditRepository } from '../admin-edits.ts'
import { definedChanges } from '../shared/defined-changes.ts'
import { type Codec, decode } from './codec.ts'
import { COMMISSION_LINES, CUSTOM_METRICS, QUOTA_VALUES, REPORTING_STRUCTURES, STATEMENTS } from './collections.ts'
import { byId } from './filters.ts'
import { call, collectionOf, inSession, type Scope } from './scope.ts'

/**
 * Sets the given fields of one record of the company (and removes the `unset` ones) with one
 * `findOneAndUpdate`, atomic on its document, and answers the record as changed. Since driver 6,
 * `findOneAndUpdate` resolves with the document itself (or null) unless `includeResultMetadata` is set;
 * `returnDocument: 'after'` makes it the changed one.
 */
function update<T>(scope: Scope, codec: Codec, companyId: string, id: string, changes: object, unset: Document = {}): Promise<T | null> {
  return call(scope, async (session) => {
    const document = await collectionOf(scope, codec).findOneAndUpdate(
      byId(companyId, id),
      { $set: definedChanges(changes), ...(Object.keys(unset).length > 0 ? { $unset: unset } : {}) },
      { ...inSession(session), returnDocument: 'after' },
    )
    return document ? decode<T>(codec, document) : null
  })
}

export function mongoAdminEdits(scope: Scope): AdminEditRepository {
  return {
    // A changed statement's rendering no longer shows it (src/v2/statement-texts.ts).
    updateStatement: (companyId, id, changes) => update(scope, STATEMENTS, companyId, id, changes, { rendering: '' }),
    updateCommissionLine: (companyId, id, changes) => update(scope, COMMISSION_LINES, companyId, id, changes),
    updateQuotaValue: (companyId, id, changes) => update(scope, QUOTA_VALUES, companyId, id, changes),
    updateStructure: (companyId, id, changes) => update(scope, REPORTING_STRUCTURES, companyId, id, changes),
    updateMetric: (companyId, id, changes) => update(scope, CUSTOM_METRICS, companyId, id, changes),
  }
}
