import type { Codec } from './codec.ts'

/**
 * The collections of the MongoDB store, one per record kind, with how each record is stored (see `codec.ts`).
 * Every collection but `companies` holds company data: its documents carry `company_id`, every filter on it
 * names the company, and a sharded cluster shards it by company (docs/scaling.md).
 */

const company = (collection: string, ...references: string[]): Codec => ({
  collection,
  references: ['company_id', ...references],
})

export const COMPANIES: Codec = { collection: 'companies', references: [] }
/**
 * The deletions of companies not finished yet (`companies.ts`), one document `{_id: company id}` each: written with
 * the company's own deletion, removed once its documents are all gone. Not company data: no deletion removes it but
 * the one it marks, and, as `companies`, it stays unsharded.
 */
export const COMPANY_DELETIONS: Codec = { collection: 'company_deletions', references: [] }
export const API_KEYS = company('api_keys', 'user_id')
export const USERS: Codec = {
  ...company('users'),
  // Emails are unique per company case-insensitively: a unique index on the lower-case copy enforces it.
  derived: {
    fields: ['email_lower'],
    compute: (user) => ({ email_lower: String(user.email).toLowerCase() }),
  },
}
export const USER_ATTRIBUTES = company('user_attributes')
export const MANAGER_ATTRIBUTIONS = company('manager_attributions', 'user_id', 'manager_id')
export const GROUP_ATTRIBUTIONS = company('group_attributions', 'user_id')
export const CUSTOM_METRICS = company('custom_metrics')
export const DATA_TABLES = company('data_tables')
export const DATA_TABLE_RECORDS = company('data_table_records', 'table_id')
export const REPORTING_STRUCTURES = company('reporting_structures', 'data_table_id')
export const STATEMENTS = company('statements', 'user_id', 'plan_id')
export const COMMISSION_LINES = company('commission_lines', 'table_id', 'record_id', 'user_id', 'plan_id')
export const QUOTAS = company('quotas')
export const QUOTA_VALUES = company('quota_values', 'quota_id', 'user_id')
export const PLANS = company('plans', 'table_id', 'quota_id')
export const IMPORTS = company('imports', 'table_id')
export const IMPORT_PAYLOADS = company('import_payloads', 'import_id', 'table_id')
/** The parts of a payload's items beyond the first, for payloads larger than a document holds (`payload-parts.ts`). */
export const IMPORT_PAYLOAD_PARTS = company('import_payload_parts', 'payload_id')
/** The latest call under each request id, with its import, for an hour (`ImportPayload.resend`). */
export const IMPORT_REQUEST_IDS = company('import_request_ids', 'import_id')
/**
 * One document per (company, purpose), written by the transactions that must not interleave: two claims for
 * one company, or two enqueues for one (company, join key). Under snapshot isolation two transactions that
 * read the same state and write different documents could both commit; making both write this document turns
 * that into a write conflict, and `withTransaction` runs the loser again on the new state.
 */
export const IMPORT_LOCKS = company('import_locks')
/** The fixture each company was created from (`company-origins.ts`): its JSON text, the first part in the document. */
export const COMPANY_ORIGINS = company('company_origins')
/** The parts of an origin's JSON text beyond the first, as `import_payload_parts` holds a payload's. */
export const COMPANY_ORIGIN_PARTS = company('company_origin_parts')

/** Every collection that holds company data, for deleting a company. Add a new company collection here. */
export const COMPANY_COLLECTIONS: readonly Codec[] = [
  API_KEYS,
  USERS,
  USER_ATTRIBUTES,
  MANAGER_ATTRIBUTIONS,
  GROUP_ATTRIBUTIONS,
  CUSTOM_METRICS,
  DATA_TABLES,
  DATA_TABLE_RECORDS,
  REPORTING_STRUCTURES,
  STATEMENTS,
  COMMISSION_LINES,
  QUOTAS,
  QUOTA_VALUES,
  IMPORTS,
  IMPORT_PAYLOADS,
  IMPORT_PAYLOAD_PARTS,
  IMPORT_REQUEST_IDS,
  IMPORT_LOCKS,
  PLANS,
  COMPANY_ORIGINS,
  COMPANY_ORIGIN_PARTS,
]

const BY_COMPANY = { company_id: 1 } as const

/**
 * The shard key of each collection of company data on a sharded cluster (docs/scaling.md gives the commands;
 * the other collections stay unsharded). Every upsert and single-document update names the whole key in its
 * filter, as MongoDB requires on a sharded collection; `ensureIndexes` creates an index that starts with each
 * key, which `shardCollection` needs; and every unique index starts with it, or MongoDB could not enforce it.
 */
export const SHARD_KEYS: ReadonlyMap<string, Readonly<Record<string, 1>>> = new Map<string, Readonly<Record<string, 1>>>([
  [USERS.collection, BY_COMPANY],
  [USER_ATTRIBUTES.collection, BY_COMPANY],
  [MANAGER_ATTRIBUTIONS.collection, BY_COMPANY],
  [GROUP_ATTRIBUTIONS.collection, BY_COMPANY],
  [CUSTOM_METRICS.collection, BY_COMPANY],
  [DATA_TABLES.collection, BY_COMPANY],
  // A large company's tables can spread over shards; the prefix of the unique (company, table, external id).
  [DATA_TABLE_RECORDS.collection, { company_id: 1, table_id: 1 }],
  [REPORTING_STRUCTURES.collection, BY_COMPANY],
  // No unique rule but `_id`: a company's rows split into chunks by id.
  [STATEMENTS.collection, { company_id: 1, _id: 1 }],
  [COMMISSION_LINES.collection, { company_id: 1, _id: 1 }],
  [QUOTAS.collection, BY_COMPANY],
  // By company only: an admin edit names a value by (company, id), without its quota.
  [QUOTA_VALUES.collection, BY_COMPANY],
  [IMPORTS.collection, BY_COMPANY],
  [IMPORT_PAYLOADS.collection, BY_COMPANY],
  [IMPORT_PAYLOAD_PARTS.collection, BY_COMPANY],
  [IMPORT_REQUEST_IDS.collection, BY_COMPANY],
  [IMPORT_LOCKS.collection, BY_COMPANY],
  [PLANS.collection, BY_COMPANY],
  [COMPANY_ORIGINS.collection, BY_COMPANY],
  [COMPANY_ORIGIN_PARTS.collection, BY_COMPANY],
])
