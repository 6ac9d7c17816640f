import type {
  ApiKey,
  CommissionLine,
  Company,
  CustomMetric,
  DataImport,
  DataTable,
  DataTableRecord,
  Environment,
  ExchangeRates,
  GroupAttribution,
  ImportDetail,
  ImportPayload,
  ImportStatus,
  ImportTarget,
  ManagerAttribution,
  Plan,
  Quota,
  QuotaType,
  QuotaValue,
  ReportingStructure,
  Statement,
  User,
  UserAttributeDefinition,
} from './model.ts'
import type { ClockOffsetRepository } from './clock-offset.ts'
import type { CompanyOriginRepository } from './company-origins.ts'
import type { ImportStatisticsRepository } from './import-statistics.ts'
import type { AdminEditRepository } from './admin-edits.ts'

/**
 * The store port: every operation the service needs, stated by what it means, not how it is queried.
 * Two adapters implement it (SQLite in `sqlite/`, MongoDB in `mongo/`) and `test/store/contract.ts` holds
 * the one suite of tests both must pass.
 *
 * Rules every adapter keeps:
 * - Every operation but `companies.*` takes the company id and never reads or writes another company's data.
 * - Lists are in id order (ObjectId order, which is creation order) unless a method says otherwise.
 * - A single method call is atomic. `transaction` makes a group of calls atomic: all or none is applied,
 *   and no other reader sees a part of it. (On a sharded MongoDB cluster, a read outside a transaction that
 *   spans shards may, for the moment of a commit, see a transaction's writes on one shard and not yet on
 *   another: docs/scaling.md.)
 * - Records are returned as fresh objects: changing one never changes the store.
 */
export interface Store {
  /** Which adapter this is (the metrics report it). */
  readonly kind: 'sqlite' | 'mongodb'
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
  /** Commission plans (`src/calculation/`). */
  readonly plans: PlanRepository
  /** Request counters of the rate limit: not company data, and not part of `transaction`. */
  readonly rateLimits: RateLimitRepository
  readonly imports: ImportRepository
  /**
   * How many items (records, users, attributions) one transaction of this store should apply at most. A larger
   * import is applied in several transactions, each of whole calls (`runClaimedImport`), and a large table is
   * emptied in batches of it (`all=true`). MongoDB ends a transaction that runs past its
   * `transactionLifetimeLimitSeconds` (60 s by default); SQLite has no such limit, and answers Infinity.
   */
  readonly itemsPerTransaction: number
  /**
   * Whether a read holds the calling thread until it is done, so that nothing else of the process runs meanwhile
   * (SQLite: node:sqlite answers synchronously), or waits on the network and leaves the thread to others (MongoDB).
   * How many reads of one company the HTTP thread takes at once follows from it (`src/routes/fair-reads.ts`).
   */
  readonly readsBlockThread: boolean
  /** Import counts across companies, for the metrics. */
  readonly importStatistics: ImportStatisticsRepository
  /** Changes to stored records made by administration (admin routes, CLI). */
  readonly adminEdits: AdminEditRepository
  /** The controlled clock's offset, shared by every process of the store: not company data, moved outside transactions. */
  readonly clockOffset: ClockOffsetRepository
  /** The fixture each company was created from, to put it back as it was (reset). */
  readonly companyOrigins: CompanyOriginRepository

  /**
   * Runs `work` with a store whose operations all belong to one transaction, committed when `work`
   * resolves and rolled back when it throws. In one process, transactions run one at a time.
   * Inside `work`, use only the store it is given. An adapter may run `work` again after a transient conflict
   * with another process (MongoDB's `withTransaction` does), so `work` must have no effect outside the store.
   * A transaction the store could not run for now rejects with StoreBusyError: nothing of it committed. One whose
   * commit MongoDB could not confirm rejects with StoreUnconfirmedError: it may have committed, whole.
   *
   * A transaction that reads a company's data to write what follows from it (an import's run, an archive's
   * checks, plans' results, statement renderings) names the company: it is then serialized with every other transaction that
   * names it, in every process that shares the store, so that it never commits on a reading another such
   * transaction changed meanwhile. SQLite serializes every write anyway (one writer per file). MongoDB's
   * snapshot isolation alone would let two transactions on two instances read the same data, write different
   * documents and both commit: each transaction naming a company writes that company's lock document first,
   * and of two that overlap, the later one conflicts and is run again once the other is over.
   */
  transaction<T>(work: (tx: Store) => Promise<T>, options?: TransactionOptions): Promise<T>

  /**
   * A count that moves once this store object has committed a write to companies, users or API keys (an
   * adapter may count more writes than those). What authenticates a request is cached for a moment
   * (`src/auth/principal-cache.ts`): a change made through this store object is seen at the next request; one
   * made by another process or thread, which this count does not see, when the cached entry expires.
   */
  committedWrites(): number

  /**
   * The version of everything committed to the store, by any connection, thread or process: it moves at every
   * commit. A value read at one version may be reused while the version is unchanged (a v2 page read ahead,
   * `src/v2/read-ahead.ts`); read the version before the data it labels. Null when the adapter has no such
   * version (MongoDB): nothing is then reused.
   */
  dataVersion(): Promise<string | null>

  /** Answers when the store can be reached; throws otherwise. */
  ping(): Promise<void>

  /**
   * Writes a copy of everything committed to a new file, whole and consistent while other connections and processes
   * keep writing (SQLite's `VACUUM INTO`, in one read transaction). Absent where the store has its own tools for it
   * (MongoDB: mongodump).
   */
  backupTo?(file: string): Promise<void>

  /** Releases connections. Idempotent. */
  close(): Promise<void>
}

export interface TransactionOptions {
  /** The company whose data the transaction reads to derive what it writes (see `Store.transaction`). */
  company?: string
}

/**
 * What a transaction names as its `company` when what it reads is the list of companies itself (the demo company
 * that a first start creates on an empty store): an id no company has, so that two such transactions, on two
 * instances started together, are serialized with each other.
 */
export const COMPANY_LIST = '000000000000000000000000'

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
  /**
   * The id of the row just before `offset`, when the caller knows it (`src/v1/offset-page.ts`): the rows after
   * it are then read from there, a seek, and `offset` is not used.
   */
  afterId?: string
}

export interface CompanyRepository {
  insert(company: Company): Promise<void>
  get(id: string): Promise<Company | null>
  /** Replaces the company's exchange rates. Returns false when unknown. */
  setExchangeRates(id: string, rates: ExchangeRates): Promise<boolean>
  list(): Promise<Company[]>
  /**
   * Deletes the company and every record that belongs to it; returns false when unknown. Inside a transaction
   * everything goes with it. Outside one, in both adapters, the company and its API keys go first, at once, so that
   * nothing reaches its records from then on (every request finds its company through them); then its records, in
   * several writes outside any transaction (a large company's would hold SQLite's thread for seconds, and would not
   * fit in a MongoDB transaction), and the call resolves once they are all gone. Readers never see a part of the
   * company, only a request that found it just before (a key reused for half a second) may. An interrupted deletion
   * (a crash, a failure) is finished by deleting the company again, which answers false then and resolves once
   * nothing of it is left. So MongoDB answers a part it could not serve or confirm StoreBusyError ("try again"),
   * though the company may be gone; SQLite's failures (its write lock held past the wait, a full disk) are never
   * unconfirmed either.
   * `pause`, given only inside a transaction (which keeps the deletion atomic), is awaited between the steps of a
   * deletion done in several (SQLite: table by table), so that a large company's deletion shares its thread.
   * `signal`, outside a transaction: once it is aborted, the sweep stops between two writes (MongoDB: between two
   * collections) and the call rejects with its reason, the company gone and its mark left (`unfinishedDeletions`), so
   * that a stopping worker does not wait for a large company's rows.
   */
  delete(id: string, options?: { pause?: () => Promise<void>; signal?: AbortSignal }): Promise<boolean>
  /**
   * The companies whose deletion began and is not finished, in id order: each adapter marks one with the first write
   * of its deletion outside a transaction and unmarks it with its last, so that a deletion a crash or a failure
   * interrupted is found and finished (deleted again) by an import worker, when it starts and every hour after. A
   * deletion under way in another process is listed too. Nothing else removes a mark, and a deletion inside a
   * transaction, all in it, makes none.
   */
  unfinishedDeletions(): Promise<string[]>
  /**
   * The companies a migration left due a full recalculation, with why: data an earlier version left wrong, which
   * only the calculation can put right (SQLite; a MongoDB store has no migrations, and none).
   */
  recalculationsDue(): Promise<Array<{ company_id: string; reason: string }>>
  /** Takes the company off that list; false when it was not on it (another process took it first). */
  takeRecalculationDue(companyId: string): Promise<boolean>
}

export interface ApiKeyRepository {
  insert(key: ApiKey): Promise<void>
  /** The key with this hash, whatever its company; null when none. */
  findByHash(hash: string): Promise<ApiKey | null>
  list(companyId: string): Promise<ApiKey[]>
  /**
   * Deletes the company's key with this id (a revocation): from the commit on, `findByHash` no longer finds it, and
   * `committedWrites` has moved. False when the company has no such key: another company's key id names none.
   */
  delete(companyId: string, id: string): Promise<boolean>
}

export interface UserRepository {
  /**
   * Inserts new users, or replaces the stored ones with the same id. Emails are unique per company,
   * case-insensitively. Statements are not touched, though their renderings show the email: no writer changes
   * one (the v1 import matches users by email; a fixture load replaces the company, renderings included).
   */
  save(companyId: string, users: User[]): Promise<void>
  get(companyId: string, id: string): Promise<User | null>
  /** The users with these ids that exist, by id. */
  getMany(companyId: string, ids: readonly string[]): Promise<Map<string, User>>
  /** The users with these emails (compared case-insensitively), keyed by lower-case email. */
  findByEmails(companyId: string, emails: readonly string[]): Promise<Map<string, User>>
  list(companyId: string, window: OffsetWindow): Promise<User[]>
  count(companyId: string): Promise<number>
  /** The greatest id of the company's users, null when it has none: new users' ids are made after it (`AscendingIds`). */
  lastId(companyId: string): Promise<string | null>
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
  /** The greatest id of the table's records, null when it has none: new records' ids are made after it (`AscendingIds`). */
  lastId(companyId: string, tableId: string): Promise<string | null>
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
  /** The table's records with these store ids (the ones that exist), keyed by id. */
  getMany(companyId: string, tableId: string, ids: readonly string[]): Promise<Map<string, DataTableRecord>>
  /** Up to `limit` records of the table after `afterId` (from the first when null), in id order: a walk of the whole table. */
  page(companyId: string, tableId: string, afterId: string | null, limit: number): Promise<DataTableRecord[]>
  /**
   * Deletes up to `limit` records of the table that carry no manual override, atomically; returns how many
   * went. An `all=true` import empties a table larger than a transaction should hold with it, batch by batch.
   */
  deleteUnoverridden(companyId: string, tableId: string, limit: number): Promise<number>
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
export const STATEMENT_ROW_FIELDS = ['id', 'user_id', 'date', 'status', 'currency', 'payment', 'metrics'] as const
export type StatementRowFields = Pick<Statement, (typeof STATEMENT_ROW_FIELDS)[number]>

/**
 * The JSON text of a statement's v2 row, rendered ahead of any read (`src/v2/statement-texts.ts`), and the key of
 * what it was rendered for. A statement keeps one. Any write of the statement drops it. It shows the user's email,
 * which no writer changes (`UserRepository.save`).
 */
export interface StatementRendering {
  id: string
  key: string
  text: string
}

/**
 * What the v2 extraction makes a statement's row from: the stored text of the row when it was rendered for the
 * key asked, else null and the statement's row fields to render it from.
 */
export type StatementRowSource = { id: string; rendering: string } | (StatementRowFields & { rendering: null })

/**
 * The currencies the amounts of a set of rows are in, for the `currencies` of the v2 field descriptors. Each list
 * is sorted and without repeats.
 */
export interface CurrenciesInUse {
  /** The rows' own `currency` (statements: of those with a payment, the only amount in it). */
  rows: string[]
  /**
   * By key of the rows' `metrics`: the currencies of its values as an amount metric renders them, an amount
   * `{value, currency}` in its currency (the row's when it has none), a number in the row's currency. A Map: the
   * keys are API keys, which may be named like an Object.prototype member (`valueOf`).
   */
  metrics: ReadonlyMap<string, string[]>
}

/** Commission lines: also by key of `record_values`, the currencies of the amounts `{value, currency}` there. */
export interface LineCurrenciesInUse extends CurrenciesInUse {
  recordValues: ReadonlyMap<string, string[]>
}

export interface StatementRepository {
  insertMany(statements: Statement[]): Promise<void>
  /** Statements of one environment in id order, within the window. */
  page(companyId: string, environment: Environment, window: RowWindow): Promise<Statement[]>
  /** The same statements as `page` with the same window, each as its rendering for `renderingKey` or its row fields. */
  pageForExtraction(companyId: string, environment: Environment, window: RowWindow, renderingKey: string): Promise<StatementRowSource[]>
  /** Up to `limit` statements after `afterId` (from the first when null), in id order, that hold no rendering for `renderingKey`. */
  pageToRender(
    companyId: string,
    environment: Environment,
    renderingKey: string,
    afterId: string | null,
    limit: number,
  ): Promise<StatementRowFields[]>
  /** Stores the renderings of statements of the environment (replacing any they held); an unknown id is ignored. */
  saveRenderings(companyId: string, environment: Environment, renderings: StatementRendering[]): Promise<void>
  /**
   * Statements of one environment in id order, skipping `offset` and returning at most `limit` (the v1
   * lists). Ordered and stable: the same window over unchanged data returns the same rows.
   */
  list(companyId: string, environment: Environment, window: OffsetWindow): Promise<Statement[]>
  count(companyId: string, environment: Environment): Promise<number>
  /** The currencies of the amounts of the environment's statements. */
  currenciesInUse(companyId: string, environment: Environment): Promise<CurrenciesInUse>
  /**
   * Inserts statements, or replaces the stored ones with the same id, atomically. Writing a statement drops its
   * rendering (`StatementRendering`): whoever writes statements renders them again (`src/v2/statement-texts.ts`).
   */
  save(statements: Statement[]): Promise<void>
  /** Deletes the company's statements with these ids, atomically; unknown ids are ignored. */
  deleteMany(companyId: string, ids: readonly string[]): Promise<void>
  /** The statements a plan calculated (`plan_id`), limited to some cells or users when asked. */
  findOfPlan(companyId: string, planId: string, only?: PlanResultSelection): Promise<Statement[]>
  /**
   * The plans (`plan_id`) of the environment's statements stated under this plan name, deleted plans' included (their
   * validated and paid statements stay), in id order.
   */
  planIdsNamed(companyId: string, environment: Environment, planName: string): Promise<string[]>
  /** Whether the environment holds statements loaded under this plan name: a fixture's, which no plan calculated. */
  loadedNamed(companyId: string, environment: Environment, planName: string): Promise<boolean>
}

/**
 * Which of a plan's results (statements, lines) are looked up: some (user, period) cells, or every period of some users.
 * What a selection finds comes in no promised order (SQLite reads a long list in slices, each in id order), and a
 * result that both `cells` and `userIds` select may come twice: callers group the results by cell, and ask for cells
 * or for users, never both.
 */
export interface PlanResultSelection {
  cells?: readonly CalculationCell[]
  userIds?: readonly string[]
}

/** One user and one period of a plan: what one statement of the plan states. */
export interface CalculationCell {
  user_id: string
  period: string
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
  /** The currencies of the amounts of the data table's lines. */
  currenciesInUse(companyId: string, tableId: string): Promise<LineCurrenciesInUse>
  /** Inserts lines, or replaces the stored ones with the same id, atomically. */
  save(lines: CommissionLine[]): Promise<void>
  /** Deletes the company's lines with these ids, atomically; unknown ids are ignored. */
  deleteMany(companyId: string, ids: readonly string[]): Promise<void>
  /** The lines a plan calculated (`plan_id`), limited to some cells or users when asked. */
  findOfPlan(companyId: string, planId: string, only?: PlanResultSelection): Promise<CommissionLine[]>
  /** Whether the environment holds lines loaded under this plan name: a fixture's, which no plan calculated. */
  loadedNamed(companyId: string, environment: Environment, planName: string): Promise<boolean>
  /**
   * The figures of the lines a plan calculated for some cells: what a recalculation reads of the lines of records
   * that did not change, without the rest of their records' values (most of a line's size).
   */
  figuresOfPlan(companyId: string, planId: string, cells: readonly CalculationCell[], fields: LineFigureFields): Promise<LineFigures[]>
  /** Sets new figures on calculated lines of one data table, with their modification time; unknown ids are ignored. */
  reprice(companyId: string, tableId: string, changes: readonly LineRepricing[]): Promise<void>
}

/** The record fields whose values `figuresOfPlan` returns: the plan's amount field and the table's id field. */
export interface LineFigureFields {
  amount: string
  externalId: string
}

/** A calculated line as a recalculation reads it (`figuresOfPlan`). */
export type LineFigures = Pick<CommissionLine, 'id' | 'record_id' | 'user_id' | 'date' | 'plan' | 'commission' | 'currency' | 'metrics'> & {
  period: string
  /** The values of the record's amount field and id field the line was calculated from (null when absent). */
  amount: unknown
  external_id: unknown
}

/** New figures of a line whose record did not change. */
export type LineRepricing = Pick<CommissionLine, 'id' | 'commission' | 'currency' | 'metrics' | 'modified_at'>

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
  /** The quota's values of these (user, period) cells that exist. */
  findCells(companyId: string, quotaId: string, cells: readonly CalculationCell[]): Promise<QuotaValue[]>
  page(companyId: string, quotaId: string, window: RowWindow): Promise<QuotaValue[]>
  count(companyId: string, quotaId: string): Promise<number>
}

export interface PlanRepository {
  /** Inserts plans, or replaces the stored ones with the same id. A name taken in the environment: StoreConflictError. */
  save(plans: Plan[]): Promise<void>
  get(companyId: string, id: string): Promise<Plan | null>
  /** In creation order. */
  list(companyId: string): Promise<Plan[]>
  /** Deletes the plan (not what it calculated). Returns false when unknown. */
  delete(companyId: string, id: string): Promise<boolean>
}

/**
 * Whose requests a rate window counts: a company (requests with a valid key), or the client address of
 * requests without one.
 */
export type RateSubject = { companyId: string } | { address: string }

/**
 * The text that names a subject's window, in the store and in the rate limiter's own counts: `company:<id>` or
 * `address:<ip>`. Made once, from the subject, by `rateSubjectKey`; an adapter stores it as it is.
 */
export type RateSubjectKey = string

export function rateSubjectKey(subject: RateSubject): RateSubjectKey {
  return 'companyId' in subject ? `company:${subject.companyId}` : `address:${subject.address}`
}

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
   * Counts `count` requests (1 when absent) of `subject` at `now` and returns its window, opening a new one of
   * `windowMs` when none is open. Atomic across processes: n concurrent hits of one request on an open window
   * return the counts k+1 to k+n, each exactly once. An instance that counts in batches
   * (`src/rate-limit/batched-counts.ts`) writes several requests in one hit.
   */
  hit(subject: RateSubjectKey, windowMs: number, now: Date, count?: number): Promise<RateWindow>
  /** The subject's window open at `now`, without counting; null when none is. Never writes. */
  peek(subject: RateSubjectKey, now: Date): Promise<RateWindow | null>
}

/** A write broke a uniqueness rule of the store (an email, a key, a (quota, user, period)). */
export class StoreConflictError extends Error {
  override name = 'StoreConflictError'
}

/**
 * The store could not run a transaction or a read for now, and wrote nothing of it: another writer held SQLite's
 * write lock past the wait; MongoDB's transaction kept conflicting, or MongoDB could not serve a transaction or a read
 * (the connection lost, no primary during a failover, a node stepping down or overloaded). Not a fault of the work: the
 * same transaction may succeed later (an import is then run again, never refused for it). A MongoDB write outside a
 * transaction that could not be served, or a commit MongoDB could not confirm, is StoreUnconfirmedError instead: it may
 * have been applied.
 */
export class StoreBusyError extends Error {
  override name = 'StoreBusyError'
}

/**
 * A StoreBusyError of the embedded store: another connection (a long import or reset, another process) held its one
 * write lock past the wait. It passes once that writer is done, however long that takes: an import is never refused
 * for it, as it is after some busy runs of another cause (`BUSY_ATTEMPTS`, worker.ts).
 */
export class StoreLockedError extends StoreBusyError {
  override name = 'StoreLockedError'
}

/**
 * A StoreBusyError of the embedded store: its file was removed or replaced (a restore by `mv`) while this process had
 * it open. SQLite in WAL mode goes on writing to the file it opened, which no name leads to any more: whatever it
 * wrote would be gone at the next start, which opens (or makes) the file the name leads to. Nothing more is written
 * (reads go on, from the file this process still has open) until the process is restarted.
 */
export class StoreFileMovedError extends StoreBusyError {
  override name = 'StoreFileMovedError'
}

/**
 * MongoDB could not serve a write made outside a transaction (the connection lost, no primary during a failover, a
 * node stepping down or overloaded), and whether it was applied is unknown: the driver may have sent it, and sent it
 * again after a failover, before the answer was lost, and a write of several documents may be half done; or the
 * primary applied it and could not confirm that it stays (a write concern error: it stepped down, say, before a
 * majority had it). Or, for the same reasons, MongoDB could not confirm a transaction's commit: the transaction may
 * have committed, whole, or not at all. Unlike StoreBusyError, doing it again may do it twice (a second API key): look
 * before. SQLite's disk failing a read or write (SQLITE_IOERR: a quota exceeded, a file size limit, a failing disk) is
 * one too: met at a commit's sync, the transaction may be there once the file is read again.
 */
export class StoreUnconfirmedError extends Error {
  override name = 'StoreUnconfirmedError'
}

/**
 * The store's disk is full, and it wrote nothing of the transaction (SQLite's SQLITE_FULL). A StoreBusyError, for
 * it passes once an operator makes room: a request is answered 503, the rate limit counts in the instance alone,
 * and an import waits, however long that lasts (it is never refused for it: a payload answered 200 is kept).
 */
export class StoreFullError extends StoreBusyError {
  override name = 'StoreFullError'
}

/**
 * The store was migrated by a newer version of the service than this one, which wrote nothing: this version
 * would read and write it by a schema it no longer has. An instance started before an upgrade gets it on its
 * next write (its imports are left for a worker of the new version) and reports itself not ready, until it is
 * restarted on the new version. (SQLite; a MongoDB store has no schema version.)
 */
export class StoreUpgradedError extends Error {
  override name = 'StoreUpgradedError'
}

/**
 * Imports and the payloads of the calls that joined them. A worker claims an import with a lease; the
 * lease holder applies the payloads and calls `finish` in the same transaction, so that an import is applied
 * exactly once whatever crashes. Times are ISO strings from the caller's clock.
 */
export interface ImportRepository {
  /**
   * Stores one call's payload with the import it joins, atomically: the import of the same company and
   * `join_key` that is `scheduled` with `window_ends_at` after `now` and after its `created_at` (an import made
   * without a debounce has no window, whatever `now` a call brings), and not after `latestImportDeadline(now)`
   * (a clock ahead of this one made it); when there is none, `fresh` is created.
   * The payload's `import_id` is set to the import it joined, its detail (`scheduledDetail`) appended to the
   * import, and its `bytes` added to the import's `payload_bytes`. Returns the import as it is after the call.
   *
   * A payload whose `resend.call_key` is that of the latest call stored under its `resend.id_key` (within
   * `resendWindow`), whose import is still there, is that call sent again: nothing is stored, and its import is
   * returned as it is now. Otherwise the payload becomes the latest call under its id.
   *
   * With `maxQueuedBytes`, the payload is refused with ImportQueueFullError, and nothing stored, when the company
   * has bytes queued (`queuedBytes`) and this payload's would take them over `maxQueuedBytes`. The check and the
   * write are one atomic step for every process sharing the store, so that the bound holds across instances.
   */
  enqueue(fresh: DataImport, payload: Omit<ImportPayload, 'import_id'>, now: string, maxQueuedBytes?: number): Promise<DataImport>
  /** The `payload_bytes` of the company's imports that are not finished (scheduled or started), summed. */
  queuedBytes(companyId: string): Promise<number>
  /** Whether a call was stored under the request id `idKey` within `resendWindow(now)`: one sent again may be it. */
  remembersRequest(companyId: string, idKey: string, now: string): Promise<boolean>
  get(companyId: string, id: string): Promise<DataImport | null>
  /**
   * The company's imports, newest first: at most `limit`, and only those in `status` (one, or any of several) and of
   * `target` when they are given. Several statuses are read by one query, not one after the other: an import that
   * moves from one to another between two reads (claimed, or handed back) would be in neither.
   */
  list(
    companyId: string,
    filter: { status?: ImportStatus | readonly ImportStatus[]; target?: ImportTarget; limit: number },
  ): Promise<DataImport[]>
  /**
   * Closes the debounce window of each scheduled import of the company whose window is still open at `now`: its
   * `window_ends_at` becomes `now`, so that no call joins it any more and a worker may run it. Atomic; returns
   * how many windows it closed.
   */
  closeWindows(companyId: string, now: string): Promise<number>
  /** The payloads joined to the import, in arrival order. */
  payloads(companyId: string, importId: string): Promise<ImportPayload[]>
  /**
   * Claims the oldest runnable import with one atomic conditional update, or returns null. Runnable: it is
   * `scheduled` with its window closed (`window_ends_at` at or before `now`), or `started` with an expired
   * lease (its worker died); and no other import of its company is `started` with a live lease. A window or a
   * lease that ends after `latestImportDeadline(now)` counts as closed or expired. The claim
   * sets `started`, `owner` and `lease_expires_at`, sets `launched_at` on the first claim and counts the attempt.
   * With `companyId`, only an import of that company is claimed. Otherwise companies take turns: `recent` lists
   * the companies whose imports the worker ran lately, the least recent first (one listed twice was served last at its
   * later place: `turnsOf`); the oldest import of a company not in it is claimed first, then one of the company in it
   * served least recently, so that a company with many imports queued does not hold the others back until its queue is
   * empty.
   */
  claimNext(owner: string, now: string, leaseExpiresAt: string, companyId?: string, recent?: readonly string[]): Promise<DataImport | null>
  /** Extends the lease while `owner` still holds the started import. False when the claim was lost. */
  renewLease(companyId: string, id: string, owner: string, leaseExpiresAt: string): Promise<boolean>
  /**
   * True while `owner` holds the started import; false when the claim was lost. Called first in the transaction
   * that applies the import, it also makes that transaction the import's writer from then on: a renewal of the
   * lease made meanwhile from outside (the worker renews every third of the lease) waits for the transaction,
   * and another worker's claim conflicts with it, instead of the transaction failing at `finish`. (On MongoDB,
   * a write to the import committed after the transaction began would be a write conflict at `finish`, and
   * `withTransaction` would run the whole transaction again, and again, while renewals go on.)
   */
  hold(companyId: string, id: string, owner: string): Promise<boolean>
  /**
   * Hands a started import back to `scheduled` while `owner` holds it (its worker stops, or with `postponed` the
   * store was too busy to run it: counted in `busy_postponements`, which `advance` clears); false otherwise. What the run committed stays
   * (`payloads_applied`): the next claim goes on after it. Its window is closed already, so that claim may be at once.
   */
  release(companyId: string, id: string, owner: string, options?: { postponed?: boolean }): Promise<boolean>
  /**
   * Records that the import's first `payloads_applied` calls (in payload order) are applied, with their
   * `details` (the first entries), while `owner` holds it: called in the transaction that applied the last of
   * them, when a run is split over several transactions. False when the claim was lost. Conditional and atomic.
   */
  advance(companyId: string, id: string, owner: string, progress: ImportProgress): Promise<boolean>
  /**
   * Marks the import finished with its outcome while `owner` holds it (and drops `payloads_applied`); false when
   * another worker took it over or it is finished already (the caller must then roll its transaction back).
   * Conditional and atomic.
   */
  finish(companyId: string, id: string, owner: string, outcome: ImportOutcome): Promise<boolean>
  /**
   * Deletes the import while `owner` holds it, with its calls' payloads and the request ids remembered for them;
   * false when another worker took it over or it is finished already (the caller must then roll its transaction
   * back). For an import whose company is gone (a call stored while the company's deletion ran): nothing else
   * would delete it, and deleting the company again would sweep everything else once more. Conditional and atomic.
   */
  discard(companyId: string, id: string, owner: string): Promise<boolean>
  /**
   * Deletes at most `limit` finished imports whose `finished_at` is before `finishedBefore`, of every company (the
   * retention of finished imports, IMPORT_RETENTION_DAYS); answers how many it deleted. Their payloads went with
   * their finish: an import not finished is never deleted.
   */
  purgeFinished(finishedBefore: string, limit: number): Promise<number>
  /**
   * Deletes at most `limit` request ids remembered (`remembersRequest`) that were received before `receivedBefore`,
   * of every company; answers how many it deleted. An enqueue forgets its own company's ids past their hour: this
   * forgets those of the companies that sent no call since, kept for good otherwise.
   */
  forgetRequestIds(receivedBefore: string, limit: number): Promise<number>
}

export interface ImportProgress {
  payloads_applied: number
  /** The details of the calls applied so far, in payload order. */
  details: ImportDetail[]
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
