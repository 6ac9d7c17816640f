import type { Document, ObjectId } from 'bson'
import type { AnyBulkWriteOperation, ClientSession } from 'mongodb'
import type {
  ApiKey,
  CommissionLine,
  Company,
  CustomMetric,
  DataTable,
  DataTableRecord,
  GroupAttribution,
  ManagerAttribution,
  Quota,
  QuotaValue,
  ReportingStructure,
  Statement,
  User,
  UserAttributeDefinition,
} from '../model.ts'
import {
  type ApiKeyRepository,
  type AttributionRepository,
  type CommissionLineRepository,
  type CompanyRepository,
  type CustomMetricRepository,
  type DataTableRecordRepository,
  type DataTableRepository,
  EXTRACTED_STATEMENT_FIELDS,
  type ExtractedStatement,
  type QuotaRepository,
  type QuotaValueRepository,
  type ReportingStructureRepository,
  type StatementForExtraction,
  type StatementRepository,
  type UserAttributeRepository,
  type UserRepository,
} from '../port.ts'
import { type Codec, encode, lookupId, lookupIds } from './codec.ts'
import {
  API_KEYS,
  COMMISSION_LINES,
  COMPANIES,
  COMPANY_COLLECTIONS,
  CUSTOM_METRICS,
  DATA_TABLE_RECORDS,
  DATA_TABLES,
  GROUP_ATTRIBUTIONS,
  MANAGER_ATTRIBUTIONS,
  QUOTA_VALUES,
  QUOTAS,
  REPORTING_STRUCTURES,
  STATEMENTS,
  USER_ATTRIBUTES,
  USERS,
} from './collections.ts'
import { lineCurrencies, statementCurrencies } from './currencies.ts'
import { byId, cursorId, inCompany, inTable, pageFilter } from './filters.ts'
import { inTransaction } from './connection.ts'
import { COMPANY_LOCK, ensureLock, writeLock } from './locks.ts'
import { atomically, call, collectionOf, counted, countAll, findAll, findFirst, findOne, inSession, insertAll, insertOne, type Scope, writeAll } from './scope.ts'

/**
 * The repositories of the port that hold the company's configuration and reporting data. Each method is one
 * MongoDB operation, or several in one transaction where the port promises a multi-document write is atomic.
 */

/**
 * Replaces each record by (company, id), inserting it when absent. An id of another company matches nothing,
 * and its insert is then refused by the unique _id index (StoreConflictError) instead of touching that
 * company's record; a unique index of the collection (an email, an external id) refuses a taken value.
 * `shardScope` gives the fields of the collection's shard key beyond the company (docs/scaling.md): an upsert
 * on a sharded collection must name the whole shard key in its filter.
 */
export function replaceById<T extends { id: string }>(
  codec: Codec,
  companyId: string,
  saved: readonly T[],
  shardScope: (record: T) => Document = () => ({}),
): AnyBulkWriteOperation<Document>[] {
  return saved.map((record) => ({
    replaceOne: { filter: byId(companyId, record.id, shardScope(record)), replacement: encode(codec, { ...record, company_id: companyId }), upsert: true },
  }))
}

/** Deletes every document of the company, in the session's transaction when there is one. */
async function deleteDocumentsOf(scope: Scope, session: ClientSession | undefined, companyId: ObjectId | string): Promise<void> {
  for (const codec of COMPANY_COLLECTIONS) await collectionOf(scope, codec).deleteMany({ company_id: companyId }, inSession(session))
}

/**
 * Deletes a company. Inside a caller's transaction, everything goes in it. Outside one, a large company could
 * not be deleted in one transaction (MongoDB ends one after 60 s): the company and its keys go first, in one
 * small transaction, so that from then on nothing reaches its data (every request finds its company through
 * them); then its documents, collection by collection, outside any transaction. If that is interrupted (a
 * failover), deleting the company again (it answers false then) removes what was left.
 */
function deleteCompany(scope: Scope, id: string): Promise<boolean> {
  const companyId = lookupId(id)
  const deleteCompanyItself = async (session: ClientSession | undefined) => {
    await collectionOf(scope, API_KEYS).deleteMany({ company_id: companyId }, inSession(session))
    return (await collectionOf(scope, COMPANIES).deleteOne({ _id: companyId } as Document, inSession(session))).deletedCount > 0
  }
  if (scope.transaction) {
    return call(scope, async (session) => {
      await deleteDocumentsOf(scope, session, companyId)
      return deleteCompanyItself(session)
    })
  }
  return call(scope, async () => {
    const existed = await inTransaction(scope.connection.client, deleteCompanyItself)
    await deleteDocumentsOf(scope, undefined, companyId)
    return existed
  })
}

export function companies(scope: Scope): CompanyRepository {
  return {
    insert: (company: Company) => counted(scope, insertOne(scope, COMPANIES, company)),
    get: (id) => findOne<Company>(scope, COMPANIES, { _id: lookupId(id) }),
    setExchangeRates: (id, rates) =>
      counted(
        scope,
        call(scope, async (session) => {
          const result = await collectionOf(scope, COMPANIES).updateOne({ _id: lookupId(id) } as Document, { $set: { exchange_rates: { ...rates } } }, inSession(session))
          return result.matchedCount > 0
        }),
      ),
    list: () => findAll<Company>(scope, COMPANIES, {}),
    delete: (id) => counted(scope, deleteCompany(scope, id)),
  }
}

export function apiKeys(scope: Scope): ApiKeyRepository {
  return {
    insert: (key: ApiKey) => counted(scope, insertOne(scope, API_KEYS, key)),
    // The one lookup not scoped by company: the key is how the company is found (a unique index on the hash).
    findByHash: (hash) => findOne<ApiKey>(scope, API_KEYS, { hash }),
    list: (companyId) => findAll<ApiKey>(scope, API_KEYS, inCompany(companyId)),
  }
}

export function users(scope: Scope): UserRepository {
  return {
    save: (companyId, saved: User[]) => counted(scope, writeAll(scope, USERS, replaceById(USERS, companyId, saved))),
    get: (companyId, id) => findOne<User>(scope, USERS, byId(companyId, id)),
    async getMany(companyId, ids) {
      if (ids.length === 0) return new Map()
      const found = await findAll<User>(scope, USERS, inCompany(companyId, { _id: { $in: lookupIds(ids) } }))
      return new Map(found.map((user) => [user.id, user]))
    },
    async findByEmails(companyId, emails) {
      if (emails.length === 0) return new Map()
      const lower = [...new Set(emails.map((email) => email.toLowerCase()))]
      const found = await findAll<User>(scope, USERS, inCompany(companyId, { email_lower: { $in: lower } }))
      return new Map(found.map((user) => [user.email.toLowerCase(), user]))
    },
    list: (companyId, window) => findAll<User>(scope, USERS, inCompany(companyId), window),
    count: (companyId) => countAll(scope, USERS, inCompany(companyId)),
  }
}

export function userAttributes(scope: Scope): UserAttributeRepository {
  return {
    insert: (definition: UserAttributeDefinition) => insertOne(scope, USER_ATTRIBUTES, definition),
    list: (companyId) => findAll<UserAttributeDefinition>(scope, USER_ATTRIBUTES, inCompany(companyId)),
  }
}

/** Deletes the attributions of the given users and inserts the new ones, in one transaction. */
async function replaceAttributions(
  scope: Scope,
  codec: Codec,
  companyId: string,
  userIds: readonly string[],
  rows: ReadonlyArray<ManagerAttribution | GroupAttribution>,
): Promise<void> {
  const operations: AnyBulkWriteOperation<Document>[] = []
  if (userIds.length > 0) operations.push({ deleteMany: { filter: inCompany(companyId, { user_id: { $in: lookupIds(userIds) } }) } })
  for (const attribution of rows) {
    operations.push({ insertOne: { document: encode(codec, { ...attribution, company_id: companyId }) } })
  }
  await writeAll(scope, codec, operations)
}

export function attributions(scope: Scope): AttributionRepository {
  return {
    replaceManagers: (companyId, userIds, rows) => replaceAttributions(scope, MANAGER_ATTRIBUTIONS, companyId, userIds, rows),
    listManagers: (companyId) => findAll<ManagerAttribution>(scope, MANAGER_ATTRIBUTIONS, inCompany(companyId)),
    replaceGroups: (companyId, userIds, rows) => replaceAttributions(scope, GROUP_ATTRIBUTIONS, companyId, userIds, rows),
    listGroups: (companyId) => findAll<GroupAttribution>(scope, GROUP_ATTRIBUTIONS, inCompany(companyId)),
  }
}

export function metrics(scope: Scope): CustomMetricRepository {
  return {
    insert: (metric: CustomMetric) => insertOne(scope, CUSTOM_METRICS, metric),
    list: (companyId) => findAll<CustomMetric>(scope, CUSTOM_METRICS, inCompany(companyId)),
  }
}

export function dataTables(scope: Scope): DataTableRepository {
  return {
    insert: (table: DataTable) => insertOne(scope, DATA_TABLES, table),
    get: (companyId, id) => findOne<DataTable>(scope, DATA_TABLES, byId(companyId, id)),
    getByKey: (companyId, environment, key) => findOne<DataTable>(scope, DATA_TABLES, inCompany(companyId, { environment, key })),
    list: (companyId) => findAll<DataTable>(scope, DATA_TABLES, inCompany(companyId)),
  }
}

/**
 * Upserts by (table, external id), in order, in one transaction. An update sets every field but the id and
 * `created_at`, which only an insert sets (`$setOnInsert`): a replaced record keeps both.
 */
export function upsertRecordsOperations(companyId: string, upserted: readonly DataTableRecord[]): AnyBulkWriteOperation<Document>[] {
  return upserted.map((record) => {
    const { _id, created_at, ...fields } = encode(DATA_TABLE_RECORDS, { ...record, company_id: companyId })
    // The filter's fields are left out of $set: an insert takes them from the filter, an update keeps them.
    for (const field of ['company_id', 'table_id', 'external_id']) delete fields[field]
    return {
      updateOne: {
        filter: inTable(companyId, record.table_id, { external_id: record.external_id }),
        update: { $set: fields, $setOnInsert: { _id, created_at } },
        upsert: true,
      },
    }
  })
}

/** The part of the records repository the foundation defined; writes added later live beside it. */
export function records(scope: Scope): Pick<DataTableRecordRepository, 'upsert' | 'list' | 'count' | 'getMany' | 'page'> {
  return {
    upsert: (companyId, upserted) => writeAll(scope, DATA_TABLE_RECORDS, upsertRecordsOperations(companyId, upserted)),
    list: (companyId, tableId, window) => findAll<DataTableRecord>(scope, DATA_TABLE_RECORDS, inTable(companyId, tableId), window),
    count: (companyId, tableId) => countAll(scope, DATA_TABLE_RECORDS, inTable(companyId, tableId)),
    async getMany(companyId, tableId, ids) {
      if (ids.length === 0) return new Map()
      const found = await findAll<DataTableRecord>(scope, DATA_TABLE_RECORDS, inTable(companyId, tableId, { _id: { $in: lookupIds(ids) } }))
      return new Map(found.map((record) => [record.id, record]))
    },
    page(companyId, tableId, afterId, limit) {
      const filter = inTable(companyId, tableId)
      if (afterId !== null) filter._id = { $gt: cursorId(afterId) }
      return findFirst<DataTableRecord>(scope, DATA_TABLE_RECORDS, filter, limit)
    },
  }
}

export function structures(scope: Scope): ReportingStructureRepository {
  return {
    insert: (structure: ReportingStructure) => insertOne(scope, REPORTING_STRUCTURES, structure),
    get: (companyId, id) => findOne<ReportingStructure>(scope, REPORTING_STRUCTURES, byId(companyId, id)),
    list: (companyId) => findAll<ReportingStructure>(scope, REPORTING_STRUCTURES, inCompany(companyId)),
  }
}

/** The fields of an extracted statement as a find projection: `id` is `_id`, which a projection includes anyway. */
const EXTRACTED_STATEMENT_PROJECTION: Document = Object.fromEntries(
  EXTRACTED_STATEMENT_FIELDS.filter((field) => field !== 'id').map((field) => [field, 1]),
)

/** A statement's rendering is kept beside it, as `{key, text}`: not part of the statement record. */
const WITHOUT_RENDERING: Document = { rendering: 0 }

type StoredExtraction = ExtractedStatement & { rendering?: { key: string; text: string } }

function forExtraction({ rendering, ...statement }: StoredExtraction, renderingKey: string): StatementForExtraction {
  if (rendering?.key === renderingKey) return { id: statement.id, rendering: rendering.text }
  return { ...statement, rendering: null }
}

export function statements(scope: Scope): Omit<StatementRepository, 'save' | 'deleteMany' | 'findOfPlan'> {
  return {
    insertMany: (rows: Statement[]) => insertAll(scope, STATEMENTS, rows),
    page: (companyId, environment, window) =>
      findFirst<Statement>(scope, STATEMENTS, pageFilter(companyId, { environment }, window), window.limit, WITHOUT_RENDERING),
    async pageForExtraction(companyId, environment, window, renderingKey) {
      const projection = { ...EXTRACTED_STATEMENT_PROJECTION, rendering: 1 }
      const found = await findFirst<StoredExtraction>(scope, STATEMENTS, pageFilter(companyId, { environment }, window), window.limit, projection)
      return found.map((statement) => forExtraction(statement, renderingKey))
    },
    pageToRender(companyId, environment, renderingKey, afterId, limit) {
      // `$ne` also matches a statement that holds no rendering at all.
      const filter = inCompany(companyId, { environment, 'rendering.key': { $ne: renderingKey } })
      if (afterId !== null) filter._id = { $gt: cursorId(afterId) }
      return findFirst<ExtractedStatement>(scope, STATEMENTS, filter, limit, EXTRACTED_STATEMENT_PROJECTION)
    },
    async dropRenderingsOfUsers(companyId, userIds) {
      if (userIds.length === 0) return
      // It drops what it found rendered: it takes the company's lock, as a rendering transaction does, so that a
      // rendering made from the former email on another instance meanwhile cannot commit beside it.
      await ensureLock(scope, companyId, COMPANY_LOCK)
      await atomically(scope, async (session) => {
        await writeLock(scope, session, companyId, COMPANY_LOCK)
        await collectionOf(scope, STATEMENTS).updateMany(
          inCompany(companyId, { user_id: { $in: lookupIds(userIds) }, rendering: { $exists: true } }),
          { $unset: { rendering: '' } },
          inSession(session),
        )
      })
    },
    saveRenderings: (companyId, environment, renderings) =>
      writeAll(
        scope,
        STATEMENTS,
        renderings.map(({ id, key, text }) => ({
          updateOne: { filter: byId(companyId, id, { environment }), update: { $set: { rendering: { key, text } } } },
        })),
      ),
    list: (companyId, environment, window) => findAll<Statement>(scope, STATEMENTS, inCompany(companyId, { environment }), window, WITHOUT_RENDERING),
    count: (companyId, environment) => countAll(scope, STATEMENTS, inCompany(companyId, { environment })),
    currenciesInUse: (companyId, environment) => statementCurrencies(scope, STATEMENTS, inCompany(companyId, { environment })),
  }
}

export function commissionLines(scope: Scope): Omit<CommissionLineRepository, 'save' | 'deleteMany' | 'findOfPlan' | 'findByRecords' | 'figuresOfPlan' | 'reprice'> {
  return {
    insertMany: (rows: CommissionLine[]) => insertAll(scope, COMMISSION_LINES, rows),
    page: (companyId, tableId, window) =>
      findFirst<CommissionLine>(scope, COMMISSION_LINES, pageFilter(companyId, { table_id: lookupId(tableId) }, window), window.limit),
    list: (companyId, tableId, window) => findAll<CommissionLine>(scope, COMMISSION_LINES, inTable(companyId, tableId), window),
    count: (companyId, tableId) => countAll(scope, COMMISSION_LINES, inTable(companyId, tableId)),
    currenciesInUse: (companyId, tableId) => lineCurrencies(scope, COMMISSION_LINES, inTable(companyId, tableId)),
  }
}

export function quotas(scope: Scope): QuotaRepository {
  return {
    insert: (quota: Quota) => insertOne(scope, QUOTAS, quota),
    get: (companyId, id) => findOne<Quota>(scope, QUOTAS, byId(companyId, id)),
    list: (companyId) => findAll<Quota>(scope, QUOTAS, inCompany(companyId)),
    setType: (companyId, id, type, modifiedAt) =>
      call(scope, async (session) => {
        const result = await collectionOf(scope, QUOTAS).updateOne(byId(companyId, id), { $set: { type, modified_at: modifiedAt } }, inSession(session))
        return result.matchedCount > 0
      }),
  }
}

export function quotaValues(scope: Scope): QuotaValueRepository {
  return {
    insertMany: (values: QuotaValue[]) => insertAll(scope, QUOTA_VALUES, values),
    page: (companyId, quotaId, window) =>
      findFirst<QuotaValue>(scope, QUOTA_VALUES, pageFilter(companyId, { quota_id: lookupId(quotaId) }, window), window.limit),
    count: (companyId, quotaId) => countAll(scope, QUOTA_VALUES, inCompany(companyId, { quota_id: lookupId(quotaId) })),
    findCells: (companyId, quotaId, cells) =>
      cells.length === 0
        ? Promise.resolve([])
        : findAll<QuotaValue>(
            scope,
            QUOTA_VALUES,
            inCompany(companyId, { quota_id: lookupId(quotaId), $or: cells.map((cell) => ({ user_id: lookupId(cell.user_id), period: cell.period })) }),
          ),
  }
}
