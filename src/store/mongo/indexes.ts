import type { Db, IndexDescription } from 'mongodb'
import {
  API_KEYS,
  COMMISSION_LINES,
  COMPANIES,
  COMPANY_DELETIONS,
  CUSTOM_METRICS,
  DATA_TABLE_RECORDS,
  DATA_TABLES,
  GROUP_ATTRIBUTIONS,
  MANAGER_ATTRIBUTIONS,
  PLANS,
  QUOTA_VALUES,
  QUOTAS,
  REPORTING_STRUCTURES,
  STATEMENTS,
  USER_ATTRIBUTES,
  USERS,
} from './collections.ts'
import { CALCULATED_PLAN_ID } from './filters.ts'

/** The (company, id) index behind every company-wide list in id order, and the shard key's prefix. */
const byCompany: IndexDescription = { key: { company_id: 1, _id: 1 }, name: 'company_id' }

/** The results of a plan by cell (src/calculation/): only calculated statements and lines carry a plan. */
const PLAN_CELLS: IndexDescription = {
  key: { company_id: 1, plan_id: 1, user_id: 1, period: 1 },
  name: 'company_plan_cell',
  partialFilterExpression: { plan_id: CALCULATED_PLAN_ID },
}

/**
 * Every index each query of the adapter needs, by collection. Each index on company data starts with
 * `company_id`, so that on a cluster sharded by company every query goes to one shard (docs/scaling.md); the
 * one exception is the API-key hash, looked up before the company is known (`api_keys` stays unsharded).
 * Extend an index only by adding a new one with a new name: `createIndexes` refuses an existing name whose
 * keys or options changed.
 */
export const INDEXES: ReadonlyMap<string, readonly IndexDescription[]> = new Map<string, readonly IndexDescription[]>([
  [COMPANIES.collection, []],
  // unfinishedDeletions: by `_id` alone. Created at start-up, as a sharded cluster's transaction could not create it.
  [COMPANY_DELETIONS.collection, []],
  [API_KEYS.collection, [{ key: { hash: 1 }, name: 'hash_unique', unique: true }, byCompany]],
  [USERS.collection, [byCompany, { key: { company_id: 1, email_lower: 1 }, name: 'company_email_unique', unique: true }]],
  [USER_ATTRIBUTES.collection, [byCompany, { key: { company_id: 1, api_key: 1 }, name: 'company_api_key_unique', unique: true }]],
  [MANAGER_ATTRIBUTIONS.collection, [byCompany, { key: { company_id: 1, user_id: 1 }, name: 'company_user' }]],
  [GROUP_ATTRIBUTIONS.collection, [byCompany, { key: { company_id: 1, user_id: 1 }, name: 'company_user' }]],
  [CUSTOM_METRICS.collection, [byCompany, { key: { company_id: 1, api_key: 1 }, name: 'company_api_key_unique', unique: true }]],
  [
    DATA_TABLES.collection,
    [byCompany, { key: { company_id: 1, environment: 1, key: 1 }, name: 'company_environment_key_unique', unique: true }],
  ],
  [
    DATA_TABLE_RECORDS.collection,
    [
      { key: { company_id: 1, table_id: 1, _id: 1 }, name: 'company_table_id' },
      { key: { company_id: 1, table_id: 1, external_id: 1 }, name: 'company_table_external_unique', unique: true },
    ],
  ],
  [REPORTING_STRUCTURES.collection, [byCompany]],
  // A v2 page: equality on (company, context), then a range on _id in order; the modification-time bounds
  // filter the rows the index walk reaches, as the SQLite adapter does with its primary key.
  // `byCompany` is also what `shardCollection` needs for their shard key, (company_id, _id).
  [STATEMENTS.collection, [{ key: { company_id: 1, environment: 1, _id: 1 }, name: 'company_environment_id' }, PLAN_CELLS, byCompany]],
  [COMMISSION_LINES.collection, [{ key: { company_id: 1, table_id: 1, _id: 1 }, name: 'company_table_id' }, PLAN_CELLS, byCompany]],
  [
    PLANS.collection,
    [byCompany, { key: { company_id: 1, environment: 1, name: 1 }, name: 'company_environment_name_unique', unique: true }],
  ],
  [QUOTAS.collection, [byCompany]],
  [
    QUOTA_VALUES.collection,
    [
      { key: { company_id: 1, quota_id: 1, _id: 1 }, name: 'company_quota_id' },
      { key: { company_id: 1, quota_id: 1, user_id: 1, period: 1 }, name: 'company_quota_user_period_unique', unique: true },
    ],
  ],
])

/**
 * Creates every collection and its indexes. Idempotent: `createIndexes` with an index that already exists
 * with the same name, keys and options does nothing, so every instance runs this at start-up. It also creates
 * each collection, which a transaction could not do on a sharded cluster (no collection is created implicitly
 * by a write inside a cross-shard transaction).
 */
export async function ensureIndexes(db: Db, extra: ReadonlyMap<string, readonly IndexDescription[]> = new Map()): Promise<void> {
  for (const [collection, indexes] of [...INDEXES, ...extra]) {
    if (indexes.length > 0) await db.collection(collection).createIndexes([...indexes])
    else await db.createCollection(collection).catch(ignoreExisting)
  }
  for (const [collection, name] of RETIRED_INDEXES) await db.collection(collection).dropIndex(name).catch(ignoreMissing)
  // The driver answers false for a collection that is not there.
  for (const collection of RETIRED_COLLECTIONS) await db.dropCollection(collection)
}

/**
 * Indexes an earlier release created that nothing reads any more: each costs every write. The lines' index by
 * record went when a recalculation started finding the cells a record leaves from the record as it was.
 */
const RETIRED_INDEXES: ReadonlyArray<readonly [collection: string, name: string]> = [
  [COMMISSION_LINES.collection, 'company_record_calculated'],
]

/**
 * Collections an earlier release created that nothing reads any more, dropped as SQLite's migrations drop their
 * tables: they hold company data that no deletion of a company reaches, since `COMPANY_COLLECTIONS` no longer names
 * them. `import_requests` kept the calls by request key for an hour (2026-11-27), before `import_request_ids`.
 */
const RETIRED_COLLECTIONS: readonly string[] = ['import_requests']

/** `createCollection` answers NamespaceExists (code 48) when the collection is there already: that is fine. */
function ignoreExisting(error: unknown): void {
  if ((error as { code?: unknown }).code !== 48) throw error
}

/** `dropIndex` answers IndexNotFound (code 27) once the index is gone, and NamespaceNotFound (26) without the collection. */
function ignoreMissing(error: unknown): void {
  const code = (error as { code?: unknown }).code
  if (code !== 27 && code !== 26) throw error
}
