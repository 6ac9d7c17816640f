/**
 * The records the store keeps. Every id is a 24-hex-character ObjectId string made by the application
 * (see `src/ids.ts`); every record but a company carries its `company_id`, and no store operation ever
 * reads across companies. Times are ISO 8601 strings in UTC with milliseconds (`Date#toISOString`), so
 * that text order is time order in every adapter.
 */

export type Environment = 'live' | 'sandbox'
export const ENVIRONMENTS: readonly Environment[] = ['live', 'sandbox']

export interface Company {
  id: string
  name: string
  /** false → every public API call with a key of this company answers 403. */
  public_api_enabled: boolean
  /** 1 (January) to 12: the month the fiscal year starts, for quota periods. */
  fiscal_year_start_month: number
  default_currency: string
  created_at: string
}

export interface ApiKey {
  id: string
  company_id: string
  /** The user account that generated the key: a key of an archived user no longer authenticates. */
  user_id: string
  /** SHA-256 of the secret, hex. The secret itself is never stored. */
  hash: string
  /** The first characters of the secret, to tell keys apart in listings. */
  prefix: string
  created_at: string
}

export type UserStatus = 'active' | 'archived' | 'inactive' | 'pending'
export const USER_STATUSES: readonly UserStatus[] = ['active', 'archived', 'inactive', 'pending']

export interface User {
  id: string
  company_id: string
  email: string
  name: string | null
  status: UserStatus
  role: string | null
  currency: string | null
  calculation_currency: string | null
  country: string | null
  code: string | null
  /** YYYY-MM-DD */
  arrival_date: string | null
  junior: boolean | null
  /** YYYY-MM: the last month of activity of an archived user, when it was given. */
  archived_until: string | null
  /**
   * Custom attribute values by attribute API key, as the v1 interface shows them: an amount attribute
   * `k` keeps its number under `k` and its currency under `k_currency`.
   */
  attributes: Record<string, unknown>
  created_at: string
  modified_at: string
}

export type UserAttributeType = 'string' | 'number' | 'amount' | 'date' | 'boolean'
export const USER_ATTRIBUTE_TYPES: readonly UserAttributeType[] = ['string', 'number', 'amount', 'date', 'boolean']

export interface UserAttributeDefinition {
  id: string
  company_id: string
  api_key: string
  name: string
  type: UserAttributeType
  created_at: string
}

export interface ManagerAttribution {
  id: string
  company_id: string
  user_id: string
  manager_id: string
  /** YYYY-MM */
  start_month: string
  /** YYYY-MM, or null when open-ended. */
  end_month: string | null
}

export interface GroupAttribution {
  id: string
  company_id: string
  user_id: string
  group_dimension: string
  group: string
  start_month: string
  end_month: string | null
}

/** How a custom metric's values look; the v2 field descriptor is derived from it. */
export type MetricKind = 'amount' | 'percentage' | 'float' | 'enum' | 'text' | 'date'
export const METRIC_KINDS: readonly MetricKind[] = ['amount', 'percentage', 'float', 'enum', 'text', 'date']

export interface CustomMetric {
  id: string
  company_id: string
  api_key: string
  name: string
  kind: MetricKind
  /** For `amount`: the currencies its values may carry (null: any). */
  currencies: string[] | null
  /** For `enum`: the allowed values. */
  enum_values: string[] | null
  created_at: string
  modified_at: string
}

export type DataTableFieldType = 'string' | 'number' | 'amount' | 'date' | 'datetime' | 'boolean' | 'multi'
export const DATA_TABLE_FIELD_TYPES: readonly DataTableFieldType[] = [
  'string',
  'number',
  'amount',
  'date',
  'datetime',
  'boolean',
  'multi',
]

export interface DataTableField {
  api_key: string
  name: string
  type: DataTableFieldType
  created_at: string
}

export interface DataTable {
  id: string
  company_id: string
  environment: Environment
  /** The table API name: `data_table_key` in v1 paths. Unique per company and environment. */
  key: string
  name: string
  /** API name of the field whose value identifies a record (upsert key). */
  id_field: string
  /** API name of the field that names a record. */
  name_field: string
  /** Every configured field, the id and name fields included. */
  fields: DataTableField[]
  created_at: string
}

export interface DataTableRecord {
  id: string
  company_id: string
  table_id: string
  /** The value of the table's id field. Unique per table. */
  external_id: string
  /** Field values by field API key, as parsed: amounts as `{value, currency}`, multi as string[]. */
  values: Record<string, unknown>
  /** Values set by hand in the product, by field API key; they win over imported values. */
  overrides: Record<string, unknown>
  created_at: string
  modified_at: string
}

export interface Money {
  value: number
  currency: string
}

export type StatementStatus = 'paid' | 'pending' | 'validated'
export const STATEMENT_STATUSES: readonly StatementStatus[] = ['paid', 'pending', 'validated']

/** Calculated commission of one person for one period: what was earned. */
export interface Statement {
  id: string
  company_id: string
  environment: Environment
  user_id: string
  /** YYYY-MM-DD */
  date: string
  plan: string
  status: StatementStatus
  /** The currency of every amount of the statement. */
  currency: string
  payment: number | null
  target: number | null
  /** A ratio: 0.85 means 85 %. */
  target_achievement: number | null
  on_target_earning: number | null
  achievement: number | null
  /** Custom metric values by metric API key: an amount as `{value, currency}`, others as plain values. */
  metrics: Record<string, unknown>
  /** Custom dimensions by API key (served by v1 only). */
  dimensions: Record<string, string[]>
  modified_at: string
}

/** The commission one data-table record earned one person: the row behind a record reporting structure. */
export interface CommissionLine {
  id: string
  company_id: string
  environment: Environment
  table_id: string
  /** The data-table record (its store id) the line comes from. */
  record_id: string
  user_id: string
  plan: string
  /** YYYY-MM-DD */
  date: string
  commission: number
  currency: string
  /** The record's field values as they were when calculated, by field API key. */
  record_values: Record<string, unknown>
  metrics: Record<string, unknown>
  modified_at: string
}

export type StructureType = 'statement_reporting' | 'record_reporting'

/** A named view over statements, or over the commission lines of one data table. */
export interface ReportingStructure {
  id: string
  company_id: string
  environment: Environment
  type: StructureType
  name: string
  /** record_reporting only: the data table whose lines it shows. */
  data_table_id: string | null
  /** API keys of the custom metrics it shows, in order. */
  metric_keys: string[]
  /** record_reporting only: API keys of the data-table fields it shows, in order. */
  field_keys: string[]
  created_at: string
  modified_at: string
}

export type QuotaType = 'amount' | 'percentage' | 'float'
export const QUOTA_TYPES: readonly QuotaType[] = ['amount', 'percentage', 'float']
export type QuotaFrequency = 'monthly' | 'quarterly' | 'semesterly' | 'annually'
export const QUOTA_FREQUENCIES: readonly QuotaFrequency[] = ['monthly', 'quarterly', 'semesterly', 'annually']
export type QuotaStatus = 'active' | 'archived'

export interface Quota {
  id: string
  company_id: string
  environment: Environment
  name: string
  type: QuotaType
  frequency: QuotaFrequency
  status: QuotaStatus
  /** The currency of the values of an amount quota. */
  currency: string
  created_at: string
  modified_at: string
}

export type QuotaValueSource = 'local' | 'integration'

/** A target of one user for one period. Unique per (quota, user, period). */
export interface QuotaValue {
  id: string
  company_id: string
  quota_id: string
  /** May name a user that no longer exists: the value is still served, with a null email. */
  user_id: string
  /** In the format of the quota's frequency: YYYY-MM, YYYY-Qn, YYYY-Sn or YYYY. */
  period: string
  value: number
  source: QuotaValueSource
  modified_at: string
}

/** What an import writes: users, manager or group attributions, or the records of one data table. */
export type ImportTarget = 'users' | 'managers' | 'groups' | 'records'
export type ImportStatus = 'scheduled' | 'started' | 'finished'

/** An item an import skipped or refused: its 1-based position in the call's list, the item as sent, why. */
export interface ImportItemIssue {
  line_number: number
  row: unknown
  details: string
}

export interface ImportError {
  /** `ValidationError`: the call was refused, nothing of it applied. `PartialFailure`: the others were applied. */
  title: 'ValidationError' | 'PartialFailure'
  description: string
  /** The most recent 100 items reported. */
  parsing_error_details: ImportItemIssue[]
}

/** The outcome of one call joined to an import (one `data_tables_details` entry). */
export interface ImportDetail {
  payload_id: string
  number_of_records: number
  error: ImportError | null
}

/**
 * An asynchronous import: the calls (payloads) that joined it while its debounce window was open, applied
 * together by a worker that holds its lease.
 */
export interface DataImport {
  id: string
  company_id: string
  target: ImportTarget
  /** records: the data table written. */
  table_id: string | null
  /** Shown in `data_tables_details`: the table key, or `users`, `managers`, `groups`. */
  data_table_key: string
  /** Calls with the same company and join key may join the same import: the target, plus the table for records. */
  join_key: string
  status: ImportStatus
  /** Calls may join until this instant (exclusive); a worker may run it from this instant on. */
  window_ends_at: string
  created_at: string
  launched_at: string | null
  finished_at: string | null
  error: boolean
  /** One entry per joined call, in arrival order. */
  details: ImportDetail[]
  /** The worker that runs it, while `started`, and until when its claim holds unless renewed. */
  lease_owner: string | null
  lease_expires_at: string | null
  /** How many times a worker claimed it (more than 1: a worker died or handed it back). */
  attempts: number
  /** The `bytes` of the calls joined: what the import counts against its company's queue bound until it is finished. */
  payload_bytes: number
}

/** What one upsert call asked for, stored before the call answers 200. */
export interface ImportPayload {
  id: string
  company_id: string
  import_id: string
  /** The call's items as sent (users, attributions or records), applied in this order. */
  items: unknown[]
  /** records: `all` empties the table before the import; `keep_overrides` keeps manual overrides. */
  options: { all: boolean; keep_overrides: boolean }
  received_at: string
  /** The size of the call's request body, in bytes: what it counts against its company's import queue bound. */
  bytes: number
}
