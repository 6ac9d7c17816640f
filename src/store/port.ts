import type {
  ApiKey,
  CommissionLine,
  Company,
  CustomMetric,
  DataImport,
  DataTable,
  DataTableRecord,
  Environment,
  GroupAttribution,
  ImportDetail,
  ImportPayload,
  ManagerAttribution,
  Quota,
  QuotaType,
  QuotaValue,
  ReportingStructure,
  Statement,
  User,
  UserAttributeDefinition,
} from './model.ts'
import type { ImportStatisticsRepository } from './import-statistics.ts'
import type { RevisionRepository } from './revisions.ts'

/**
 * The store port: every operation the service needs, stated by what it means, not how it is queried.
 * Two adapters implement it (SQLite in `sqlite/`, MongoDB in `mongo/`) and `test/store/contract.ts` holds
 * the one suite of tests both must pass.
 *
 * Rules every adapter keeps:
 * - Every operation but `companies.*` takes the company id and never reads or writes another company's data.
 * - Lists are in id order (ObjectId order, which is creation order) unless a method says otherwise.
 * - A single method call is atomic. `transaction` makes a group of calls atomic: all or none is applied,
 *   and no other reader sees a part of it.
 * - Records are returned as fresh objects: changing one never changes the store.
 */
export interface Store {
  readonly companies: CompanyRepository
  readonly apiKeys: ApiKeyRepository
  readonly users: UserRepository
  readonly userAttributes: UserAttributeRepository
  readonly attributions: AttributionRepository
  readonly metrics: CustomMetricRepository
  readonly dataTables: DataTableRepository
  readonly records: DataTableRecordRepository
  readonly structures: ReportingStructureRepository
  readonly statements: StatementRepository
  readonly commissionLines: CommissionLineRepository
  readonly quotas: QuotaRepository
  readonly quotaValues: QuotaValueRepository
  /** Request counters of the rate limit: not company data, and not part of `transaction`. */
  readonly rateLimits: RateLimitRepository
  readonly imports: ImportRepository
  /** Import counts across companies, for the metrics. */
  readonly importStatistics: ImportStatisticsRepository
  /** Changes to stored records made by administration (admin routes, CLI). */
  readonly revisions: RevisionRepository

  /**
   * Runs `work` with a store whose operations all belong to one transaction, committed when `work`
   * resolves and rolled back when it throws. Transactions are serialized with every other write.
   * Inside `work`, use only the store it is given. An adapter may run `work` again after a transient conflict
   * with another process (MongoDB's `withTransaction` does), so `work` must have no effect outside the store.
   */
  transaction<T>(work: (tx: Store) => Promise<T>): Promise<T>

  /** Answers when the store can be reached; throws otherwise. */
  ping(): Promise<void>

  /** Releases connections. Idempotent. */
  close(): Promise<void>
}

/** An id-ordered window over a sequence of rows, for the v2 pages. */
export interface RowWindow {
  /** Only rows whose id is greater than this one. */
  afterId?: string
  /** At most this many rows. */
  limit: number
  /** Only rows whose modification time is after this instant (ISO string), or at it when `inclusive`. */
  modifiedAfter?: TimeBound
  /** Only rows whose modification time is before this instant, or at it when `inclusive`. */
  modifiedBefore?: TimeBound
}

export interface TimeBound {
  at: string
  inclusive: boolean
}

/** An offset window, for the v1 lists. */
export interface OffsetWindow {
  offset: number
  limit: number
}

export interface CompanyRepository {
  insert(company: Company): Promise<void>
  get(id: string): Promise<Company | null>
  list(): Promise<Company[]>
  /** Deletes the company and every record that belongs to it, atomically. Returns false when unknown. */
  delete(id: string): Promise<boolean>
}

export interface ApiKeyRepository {
  insert(key: ApiKey): Promise<void>
  /** The key with this hash, whatever its company; null when none. */
  findByHash(hash: string): Promise<ApiKey | null>
  list(companyId: string): Promise<ApiKey[]>
}

export interface UserRepository {
  /**
   * Inserts new users, or replaces the stored ones with the same id. Emails are unique per company,
   * case-insensitively. A user whose email changes takes the renderings of its statements with it
   * (`StatementRendering`: they show the email), in the same write.
   */
  save(companyId: string, users: User[]): Promise<void>
  get(companyId: string, id: string): Promise<User | null>
  /** The users with these ids that exist, by id. */
  getMany(companyId: string, ids: readonly string[]): Promise<Map<string, User>>
  /** The users with these emails (compared case-insensitively), keyed by lower-case email. */
  findByEmails(companyId: string, emails: readonly string[]): Promise<Map<string, User>>
  list(companyId: string, window: OffsetWindow): Promise<User[]>
  count(companyId: string): Promise<number>
}

export interface UserAttributeRepository {
  insert(definition: UserAttributeDefinition): Promise<void>
  /** In creation order. */
  list(companyId: string): Promise<UserAttributeDefinition[]>
}

export interface AttributionRepository {
  /** Replaces every manager attribution of the given users by `attributions` (those of the users only). */
  replaceManagers(companyId: string, userIds: readonly string[], attributions: ManagerAttribution[]): Promise<void>
  listManagers(companyId: string): Promise<ManagerAttribution[]>
  /** Replaces every group attribution of the given users by `attributions`. */
  replaceGroups(companyId: string, userIds: readonly string[], attributions: GroupAttribution[]): Promise<void>
  listGroups(companyId: string): Promise<GroupAttribution[]>
}

export interface CustomMetricRepository {
  insert(metric: CustomMetric): Promise<void>
  /** In creation order. */
  list(companyId: string): Promise<CustomMetric[]>
}

export interface DataTableRepository {
  insert(table: DataTable): Promise<void>
  get(companyId: string, id: string): Promise<DataTable | null>
  getByKey(companyId: string, environment: Environment, key: string): Promise<DataTable | null>
  list(companyId: string): Promise<DataTable[]>
}

export interface DataTableRecordRepository {
  /** Inserts or replaces records, matched by (table, external_id). A replaced record keeps its id and created_at. */
  upsert(companyId: string, records: DataTableRecord[]): Promise<void>
  list(companyId: string, tableId: string, window: OffsetWindow): Promise<DataTableRecord[]>
  count(companyId: string, tableId: string): Promise<number>
  /**
   * Writes records as given, atomically: each replaces the stored record with its id, or is inserted. Unlike
   * `upsert` it does not look the external id up: the caller passes the stored id of an existing record
   * (found with `findByExternalIds`); an external id held by another record is refused with StoreConflictError.
   */
  saveMany(companyId: string, records: DataTableRecord[]): Promise<void>
  /** The table's records with these external ids (the ones that exist), keyed by external id. */
  findByExternalIds(companyId: string, tableId: string, externalIds: readonly string[]): Promise<Map<string, DataTableRecord>>
  /** Deletes the table's records with these external ids, atomically; unknown ids are ignored. Returns how many went. */
  deleteByExternalIds(companyId: string, tableId: string, externalIds: readonly string[]): Promise<number>
  /** Deletes every record of the table, atomically. Returns how many went. */
  deleteAll(companyId: string, tableId: string): Promise<number>
  /** The table's records that carry at least one manual override, in id order. */
  listOverridden(companyId: string, tableId: string): Promise<DataTableRecord[]>
}

export interface ReportingStructureRepository {
  insert(structure: ReportingStructure): Promise<void>
  get(companyId: string, id: string): Promise<ReportingStructure | null>
  list(companyId: string): Promise<ReportingStructure[]>
}

/**
 * The fields of a statement that a v2 statement row shows (`src/v2/rows.ts`): what a row is rendered from, ahead
 * of reads (`pageToRender`) or as it is read (`pageForExtraction`, for a statement without a rendering). Reading
 * only these costs about half of reading whole statements, a page of 2,000 at a time.
 */
export const EXTRACTED_STATEMENT_FIELDS = ['id', 'user_id', 'date', 'status', 'currency', 'payment', 'metrics'] as const
export type ExtractedStatement = Pick<Statement, (typeof EXTRACTED_STATEMENT_FIELDS)[number]>

/**
 * The JSON text of a statement's v2 row, rendered ahead of any read (`src/v2/statement-texts.ts`), and the key of
 * what it was rendered for. A statement keeps one. It shows the user's email, so it is dropped when the statement
 * is written again and when its user's email changes (`users.save`).
 */
export interface StatementRendering {
  id: string
  key: string
  text: string
}

/**
 * A statement as the v2 extraction reads it: the stored text of its row when that text was rendered for the
 * key asked, else null and the fields to render the row from.
 */
export type StatementForExtraction = { id: string; rendering: string } | (ExtractedStatement & { rendering: null })

export interface StatementRepository {
  insertMany(statements: Statement[]): Promise<void>
  /** Statements of one environment in id order, within the window. */
  page(companyId: string, environment: Environment, window: RowWindow): Promise<Statement[]>
  /** The same statements as `page` with the same window, each as its rendering for `renderingKey` or its extracted fields. */
  pageForExtraction(companyId: string, environment: Environment, window: RowWindow, renderingKey: string): Promise<StatementForExtraction[]>
  /** Up to `limit` statements after `afterId` (from the first when null), in id order, that hold no rendering for `renderingKey`. */
  pageToRender(companyId: string, environment: Environment, renderingKey: string, afterId: string | null, limit: number): Promise<ExtractedStatement[]>
  /** Stores the renderings of statements of the environment (replacing any they held); an unknown id is ignored. */
  saveRenderings(companyId: string, environment: Environment, renderings: StatementRendering[]): Promise<void>
  /**
   * Statements of one environment in id order, skipping `offset` and returning at most `limit` (the v1
   * lists). Ordered and stable: the same window over unchanged data returns the same rows.
   */
  list(companyId: string, environment: Environment, window: OffsetWindow): Promise<Statement[]>
  count(companyId: string, environment: Environment): Promise<number>
}

export interface CommissionLineRepository {
  insertMany(lines: CommissionLine[]): Promise<void>
  /** Lines of one data table in id order, within the window. */
  page(companyId: string, tableId: string, window: RowWindow): Promise<CommissionLine[]>
  /**
   * Lines of one data table in id order, skipping `offset` and returning at most `limit` (the v1 lists).
   * Ordered and stable: the same window over unchanged data returns the same rows.
   */
  list(companyId: string, tableId: string, window: OffsetWindow): Promise<CommissionLine[]>
  count(companyId: string, tableId: string): Promise<number>
}

export interface QuotaRepository {
  insert(quota: Quota): Promise<void>
  get(companyId: string, id: string): Promise<Quota | null>
  list(companyId: string): Promise<Quota[]>
  /** Changes the type only: no value and no value's modification time changes. Returns false when unknown. */
  setType(companyId: string, id: string, type: QuotaType, modifiedAt: string): Promise<boolean>
}

export interface QuotaValueRepository {
  /** Inserts values; a second value for the same (quota, user, period) is refused with StoreConflictError. */
  insertMany(values: QuotaValue[]): Promise<void>
  page(companyId: string, quotaId: string, window: RowWindow): Promise<QuotaValue[]>
  count(companyId: string, quotaId: string): Promise<number>
}

/**
 * Whose requests a rate window counts: a company (requests with a valid key), or the client address of
 * requests without one.
 */
export type RateSubject = { companyId: string } | { address: string }

/** A subject's open rate window. */
export interface RateWindow {
  /** Requests counted in the window, the last one included. */
  hits: number
  /** When the window closes (ISO string); the next request after it opens a new window. */
  resetsAt: string
}

/**
 * Request counters shared by every process that uses the store, so that the rate limit holds across
 * instances. A window opens with a subject's first request after its previous window closed, and lasts the
 * length the request gives. Counters are transient: an adapter may forget a closed window at any time, and
 * need not keep them through a crash.
 */
export interface RateLimitRepository {
  /**
   * Counts one request of `subject` at `now` and returns its window, opening a new one of `windowMs` when none
   * is open. Atomic across processes: n concurrent hits on one open window return the counts k+1 to k+n,
   * each exactly once.
   */
  hit(subject: RateSubject, windowMs: number, now: Date): Promise<RateWindow>
  /** The subject's window open at `now`, without counting; null when none is. Never writes. */
  peek(subject: RateSubject, now: Date): Promise<RateWindow | null>
}

/** A write broke a uniqueness rule of the store (an email, a key, a (quota, user, period)). */
export class StoreConflictError extends Error {
  override name = 'StoreConflictError'
}

/**
 * Imports and the payloads of the calls that joined them. A worker claims an import with a lease; the
 * lease holder applies the payloads and calls `finish` in the same transaction, so that an import is applied
 * exactly once whatever crashes. Times are ISO strings from the caller's clock.
 */
export interface ImportRepository {
  /**
   * Stores one call's payload with the import it joins, atomically: the import of the same company and
   * `join_key` that is `scheduled` with `window_ends_at` after `now`; when there is none, `fresh` is created.
   * The payload's `import_id` is set to the import it joined, a detail for it appended to the import, and its
   * `bytes` added to the import's `payload_bytes`. Returns the import as it is after the call.
   *
   * With `maxQueuedBytes`, the payload is refused with ImportQueueFullError, and nothing stored, when the company
   * has bytes queued (`queuedBytes`) and this payload's would take them over `maxQueuedBytes`. The check and the
   * write are one atomic step for every process sharing the store, so that the bound holds across instances.
   */
  enqueue(fresh: DataImport, payload: Omit<ImportPayload, 'import_id'>, now: string, maxQueuedBytes?: number): Promise<DataImport>
  /** The `payload_bytes` of the company's imports that are not finished (scheduled or started), summed. */
  queuedBytes(companyId: string): Promise<number>
  get(companyId: string, id: string): Promise<DataImport | null>
  /** The payloads joined to the import, in arrival order. */
  payloads(companyId: string, importId: string): Promise<ImportPayload[]>
  /**
   * Claims the oldest runnable import with one atomic conditional update, or returns null. Runnable: it is
   * `scheduled` with its window closed (`window_ends_at` at or before `now`), or `started` with an expired
   * lease (its worker died); and no other import of its company is `started` with a live lease. The claim
   * sets `started`, `owner` and `lease_expires_at`, sets `launched_at` on the first claim and counts the attempt.
   */
  claimNext(owner: string, now: string, leaseExpiresAt: string): Promise<DataImport | null>
  /** Extends the lease while `owner` still holds the started import. False when the claim was lost. */
  renewLease(companyId: string, id: string, owner: string, leaseExpiresAt: string): Promise<boolean>
  /** Hands a started import back to `scheduled` (nothing of it applied) while `owner` holds it. False otherwise. */
  release(companyId: string, id: string, owner: string): Promise<boolean>
  /**
   * Marks the import finished with its outcome while `owner` holds it; false when another worker took it
   * over or it is finished already (the caller must then roll its transaction back). Conditional and atomic.
   */
  finish(companyId: string, id: string, owner: string, outcome: ImportOutcome): Promise<boolean>
}

/** An enqueue refused because the company's import queue would go over its bound. */
export class ImportQueueFullError extends Error {
  override name = 'ImportQueueFullError'
  /** The bytes the company had queued. */
  readonly queuedBytes: number

  constructor(queuedBytes: number) {
    super(`the company's import queue holds ${queuedBytes} bytes`)
    this.queuedBytes = queuedBytes
  }
}

export interface ImportOutcome {
  finished_at: string
  error: boolean
  details: ImportDetail[]
}
