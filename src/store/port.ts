import type {
  ApiKey,
  CommissionLine,
  Company,
  CustomMetric,
  DataTable,
  DataTableRecord,
  Environment,
  GroupAttribution,
  ManagerAttribution,
  Quota,
  QuotaType,
  QuotaValue,
  ReportingStructure,
  Statement,
  User,
  UserAttributeDefinition,
} from './model.ts'

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

  /**
   * Runs `work` with a store whose operations all belong to one transaction, committed when `work`
   * resolves and rolled back when it throws. Transactions are serialized with every other write.
   * Inside `work`, use only the store it is given.
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
  /** Inserts new users, or replaces the stored ones with the same id. Emails are unique per company, case-insensitively. */
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
}

export interface ReportingStructureRepository {
  insert(structure: ReportingStructure): Promise<void>
  get(companyId: string, id: string): Promise<ReportingStructure | null>
  list(companyId: string): Promise<ReportingStructure[]>
}

export interface StatementRepository {
  insertMany(statements: Statement[]): Promise<void>
  /** Statements of one environment in id order, within the window. */
  page(companyId: string, environment: Environment, window: RowWindow): Promise<Statement[]>
  count(companyId: string, environment: Environment): Promise<number>
}

export interface CommissionLineRepository {
  insertMany(lines: CommissionLine[]): Promise<void>
  /** Lines of one data table in id order, within the window. */
  page(companyId: string, tableId: string, window: RowWindow): Promise<CommissionLine[]>
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

/** A write broke a uniqueness rule of the store (an email, a key, a (quota, user, period)). */
export class StoreConflictError extends Error {
  override name = 'StoreConflictError'
}
