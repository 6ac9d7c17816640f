import type { ImportError } from './schemas.ts'

export type { ImportError, ImportItemIssue } from './schemas.ts'

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
  /** The company's fixed exchange rates, for plans (absent: none, only same-currency amounts calculate). */
  exchange_rates?: ExchangeRates
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
  /** YYYY-MM: the last month of activity of an archived user (the archive's `end_date`, or the month before the archive). */
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
  /** YYYY-MM, or null: from the beginning. */
  start_month: string | null
  /** YYYY-MM, or null when open-ended. */
  end_month: string | null
}

export interface GroupAttribution {
  id: string
  company_id: string
  user_id: string
  group_dimension: string
  group: string
  /** YYYY-MM, or null: from the beginning. */
  start_month: string | null
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
export const DATA_TABLE_FIELD_TYPES: readonly DataTableFieldType[] = ['string', 'number', 'amount', 'date', 'datetime', 'boolean', 'multi']

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
  /** The plan that calculated it and its period (`src/calculation/`); null for a statement loaded as it is. */
  plan_id: string | null
  period: string | null
  /**
   * The exact sums the calculation stated it from, kept so that records added to its cell are counted without
   * reading the cell's lines again (`addToCell`). Absent on a statement loaded as it is, and dropped when a line of
   * its cell is edited by hand. Never served.
   */
  sums?: CellSums
  modified_at: string
}

/** A calculated statement's totals in whole cents: what its records achieved, its payment, its bonus. */
export interface CellSums {
  achievement: number
  payment: number
  bonus: number
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
  /** The plan that calculated it and the period of its statement; null for a line loaded as it is. */
  plan_id: string | null
  period: string | null
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

/** Where a plan reads its inputs: the field of a record is equal to one of some values, or holds a value. */
export type PlanFilter =
  /** The field's value, as text, is one of `values` (a multi-valued field: one of its values is). */
  | { field: string; in: string[] }
  /** The multi-valued field holds `value`. */
  | { field: string; contains: string }

/** An attainment band of a plan: from `from` (a ratio: 1 is 100 % of the quota) up to the next band's `from`. */
export interface PlanTier {
  from: number
  /** The commission rate in the band: 0.05 is 5 % of the amount. */
  rate: number
  name: string
}

/**
 * Whether a tier's rate applies to the whole amount of the period (`whole`: the band the attainment reaches
 * sets the rate of every deal) or only to the part of the amount inside the band (`marginal`).
 */
export type TierMode = 'whole' | 'marginal'
export const TIER_MODES: readonly TierMode[] = ['whole', 'marginal']

/** The custom metrics a plan writes (API keys), each optional. */
export interface PlanMetrics {
  /** percentage: the period's attainment (0.85 = 85 %), on statements. */
  attainment: string | null
  /** enum: the name of the tier the attainment reaches, on statements. */
  tier: string | null
  /** amount: what the tiers paid above the base rate, on statements and commission lines. */
  bonus: string | null
}

/**
 * A commission plan: how the records of one data table become commission lines and statements
 * (`src/calculation/`, formulas in `docs/calculation.md`).
 */
export interface Plan {
  id: string
  company_id: string
  environment: Environment
  /** Unique per company and environment; the `plan` of the statements and lines it produces. */
  name: string
  /** The data table it reads (of the same environment). */
  table_id: string
  /** The record field whose value names the user who earns: an email, or a user id. */
  user_field: string
  /** The record field (date or date-time) that places a record in a period. */
  date_field: string
  /** The record field (amount) the commission is a share of. */
  amount_field: string
  /** Periods on the company's fiscal year, as quota periods are. */
  frequency: QuotaFrequency
  /** The rate below the first tier, or of every record when the plan has no quota or the user no target. */
  rate: number
  /** Every filter must hold for a record to count. */
  filters: PlanFilter[]
  /** An amount quota of the same frequency whose value for the user and period is the target. */
  quota_id: string | null
  /** By ascending `from`. */
  tiers: PlanTier[]
  tier_mode: TierMode
  metrics: PlanMetrics
  created_at: string
  modified_at: string
}

/**
 * Fixed exchange rates of a company: how much one unit of each currency is worth in the company's default
 * currency (which is worth 1 whether listed or not).
 */
export type ExchangeRates = Record<string, number>

/** What an import writes: users, manager or group attributions, or the records of one data table. */
export const IMPORT_TARGETS = ['users', 'managers', 'groups', 'records'] as const
export type ImportTarget = (typeof IMPORT_TARGETS)[number]
export const IMPORT_STATUSES = ['scheduled', 'started', 'finished'] as const
export type ImportStatus = (typeof IMPORT_STATUSES)[number]

/** One call joined to an import and its outcome (one `data_tables_details` entry). */
export interface ImportDetail {
  payload_id: string
  /**
   * What the call wrote: its table's key, or `users`, `managers`, `groups`. Absent from details stored before
   * imports stacked across tables: the import's `data_table_key` is theirs.
   */
  data_table_key?: string
  /** How many of the call's items were applied: null until the import is finished, and for a refused call. */
  number_of_records: number | null
  error: ImportError | null
  /**
   * Record calls: the keys its records carried that the table does not know, ignored (the records were applied
   * with their known fields), the first 100 in the order met. Not an error. Absent from details stored before.
   */
  ignored_keys?: string[]
}

/** The detail of a call that has just joined an import: nothing applied yet. */
export function scheduledDetail(payload: { id: string; data_table_key?: string }): ImportDetail {
  return { payload_id: payload.id, data_table_key: payload.data_table_key, number_of_records: null, error: null, ignored_keys: [] }
}

/**
 * An asynchronous import: the calls (payloads) that joined it while its debounce window was open, applied
 * together by a worker that holds its lease.
 */
export interface DataImport {
  id: string
  company_id: string
  target: ImportTarget
  /**
   * Null: each payload names its table. Set only on record imports stored before imports stacked across tables,
   * whose payloads all wrote this one table.
   */
  table_id: string | null
  /** The target (`users`, `managers`, `groups`, `records`); on those older record imports, their table's key. */
  data_table_key: string
  /**
   * Calls with the same company and join key may join the same import: the target. Record calls of every table
   * join one import (imports stack across tables); users, managers and groups have their own.
   */
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
  /** How many runs in a row found the store too busy and handed it back (absent: none since its last progress). */
  busy_postponements?: number
  /**
   * Set while a run too large for one transaction is applied in several (see `runClaimedImport`): how many of
   * its calls, in payload order, are applied and committed, their outcomes in the first entries of `details`.
   * A run that starts again goes on after them. Absent on an import applied in one transaction.
   */
  payloads_applied?: number
  /** The `bytes` of the calls joined: what the import counts against its company's queue bound until it is finished. */
  payload_bytes: number
}

/** What one upsert call asked for, stored before the call answers 200. */
export interface ImportPayload {
  id: string
  company_id: string
  import_id: string
  /** records: the data table the call writes; null for the other targets. */
  table_id?: string | null
  /** What the call writes, as `data_tables_details` names it: the table's key, or `users`, `managers`, `groups`. */
  data_table_key?: string
  // Both are absent from payloads stored before imports stacked across tables: their import's are theirs.
  /** The call's items as sent (users, attributions or records), applied in this order. */
  items: unknown[]
  /** records: `all` empties the table before the import; `keep_overrides` keeps manual overrides. */
  options: { all: boolean; keep_overrides: boolean }
  received_at: string
  /** The size of the call's request body, in bytes: what it counts against its company's import queue bound. */
  bytes: number
  /**
   * What names a call that may reach the service again as it is (a PUT that nginx sends to another instance when the
   * first died holding it): the request id it came with (`id_key`), and the call itself under that id (`call_key`).
   * The latest call stored under an id is remembered for REQUEST_KEY_RETENTION_MS; a call with its `call_key` is that
   * call, not stored again (`ImportRepository.enqueue`).
   */
  resend?: ResendKeys
}

/** The keys of a call that may be sent again: see `ImportPayload.resend`. */
export interface ResendKeys {
  id_key: string
  call_key: string
}

/** How long the latest call under a request id is remembered: a call sent again comes within seconds. */
export const REQUEST_KEY_RETENTION_MS = 60 * 60 * 1000
/** How far ahead of `now` a remembered call's time may be: instances' clocks differ by a little. */
const REQUEST_CLOCK_TOLERANCE_MS = 60 * 1000

/**
 * The times a remembered call must have been stored between to be sent again now: within the retention, and not
 * later than `now` (a controlled clock moved back) but for the tolerance of clocks.
 */
export function resendWindow(now: string): { since: string; until: string } {
  const at = Date.parse(now)
  return {
    since: new Date(at - REQUEST_KEY_RETENTION_MS).toISOString(),
    until: new Date(at + REQUEST_CLOCK_TOLERANCE_MS).toISOString(),
  }
}

/**
 * How far ahead of the time it is made an import's window may end (a day's debounce at most) or its lease expire (an
 * hour at most), with an hour for the clocks of instances sharing the store.
 */
export const IMPORT_DEADLINES_AHEAD_MS = 25 * 60 * 60 * 1000
const LAST_INSTANT_MS = Date.parse('9999-12-31T23:59:59.999Z')

/**
 * The latest an import's window may end, or its lease expire, at `now`. One later was made by a clock ahead of this
 * one (a controlled clock moved ahead, then the store used on the system's; a system clock stepped back): it counts
 * as closed, or expired, rather than hold the company's imports until this clock reaches it.
 */
export function latestImportDeadline(now: string): string {
  return new Date(Math.min(Date.parse(now) + IMPORT_DEADLINES_AHEAD_MS, LAST_INSTANT_MS)).toISOString()
}

/**
 * The companies of `claimNext`'s `recent` in their turns, each once, the least recently served first: a company
 * listed twice was served last at its later place, so that is where it stands.
 */
export function turnsOf(recent: readonly string[]): string[] {
  return [...new Set(recent.toReversed())].toReversed()
}
