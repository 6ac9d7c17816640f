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
} from '../../../src/store/model.ts'
import type { Store } from '../../../src/store/port.ts'
import {
  aCommissionLine,
  aCompany,
  aDataTable,
  aGroupAttribution,
  aManagerAttribution,
  aMetric,
  anApiKey,
  aQuota,
  aQuotaValue,
  aRecord,
  aStatement,
  aStructure,
  aUser,
  aUserAttribute,
  byId,
} from '../builders.ts'
import { ALL } from './support.ts'

/**
 * A company with one or two of everything, and every read of the port over it: what the suites that span every
 * repository (round trips, deletion, tenant isolation, transactions) write and compare.
 */

/** Everything one company holds, one or two of each, as `populate` inserts it. */
export interface World {
  company: Company
  /** A user and their manager. */
  users: User[]
  apiKey: ApiKey
  attribute: UserAttributeDefinition
  manager: ManagerAttribution
  group: GroupAttribution
  metric: CustomMetric
  table: DataTable
  record: DataTableRecord
  structure: ReportingStructure
  /** One live and one sandbox statement. */
  statements: Statement[]
  line: CommissionLine
  quota: Quota
  value: QuotaValue
}

/** Inserts a new company; returns its id. */
export async function aStoredCompany(store: Store, overrides: Partial<Company> = {}): Promise<string> {
  const company = aCompany(overrides)
  await store.companies.insert(company)
  return company.id
}

/** Inserts one of everything for a new company. Names given in `shared` may be reused by another company. */
export async function populate(
  store: Store,
  shared: { email: string; tableKey: string; externalId: string; apiName: string },
): Promise<World> {
  const company = aCompany()
  const id = company.id
  const user = aUser(id, { email: shared.email })
  const boss = aUser(id)
  const table = aDataTable(id, { key: shared.tableKey })
  const quota = aQuota(id)
  const world: World = {
    company,
    users: [user, boss],
    apiKey: anApiKey(id, user.id),
    attribute: aUserAttribute(id, { api_key: shared.apiName }),
    manager: aManagerAttribution(id, user.id, boss.id),
    group: aGroupAttribution(id, user.id),
    metric: aMetric(id, { api_key: shared.apiName }),
    table,
    record: aRecord(id, table.id, { external_id: shared.externalId }),
    structure: aStructure(id, { type: 'record_reporting', data_table_id: table.id, field_keys: ['amount'] }),
    statements: [aStatement(id, { user_id: user.id }), aStatement(id, { user_id: user.id, environment: 'sandbox' })],
    line: aCommissionLine(id, table.id, { user_id: user.id }),
    quota,
    value: aQuotaValue(id, quota.id, { user_id: user.id }),
  }
  await store.companies.insert(company)
  await store.users.save(id, world.users)
  await store.apiKeys.insert(world.apiKey)
  await store.userAttributes.insert(world.attribute)
  await store.attributions.replaceManagers(id, [user.id], [world.manager])
  await store.attributions.replaceGroups(id, [user.id], [world.group])
  await store.metrics.insert(world.metric)
  await store.dataTables.insert(table)
  await store.records.upsert(id, [world.record])
  await store.structures.insert(world.structure)
  await store.statements.insertMany(world.statements)
  await store.commissionLines.insertMany([world.line])
  await store.quotas.insert(quota)
  await store.quotaValues.insertMany([world.value])
  return world
}

/** Two companies, each with one of everything, under the same names. */
export function populateTwo(store: Store): Promise<World[]> {
  const shared = { email: 'Shared@Example.com', tableKey: 'deals', externalId: 'deal-1', apiName: 'region' }
  return Promise.all([populate(store, shared), populate(store, shared)])
}

/** What `readAll` answers. */
export type Reads = Awaited<ReturnType<typeof readAll>>

/** Every read of the port for `companyId`, limited to the ids of `world` (which may be another company's). */
export async function readAll(store: Store, companyId: string, world: World) {
  const window = { limit: 1000 }
  return {
    users: await store.users.list(companyId, ALL),
    userCount: await store.users.count(companyId),
    user: await store.users.get(companyId, world.users[0].id),
    usersById: await store.users.getMany(companyId, [world.users[0].id, world.users[1].id]),
    usersByEmail: await store.users.findByEmails(companyId, [world.users[0].email]),
    apiKeys: await store.apiKeys.list(companyId),
    attributes: await store.userAttributes.list(companyId),
    managers: await store.attributions.listManagers(companyId),
    groups: await store.attributions.listGroups(companyId),
    metrics: await store.metrics.list(companyId),
    tables: await store.dataTables.list(companyId),
    table: await store.dataTables.get(companyId, world.table.id),
    tableByKey: await store.dataTables.getByKey(companyId, 'live', world.table.key),
    records: await store.records.list(companyId, world.table.id, ALL),
    recordCount: await store.records.count(companyId, world.table.id),
    structures: await store.structures.list(companyId),
    structure: await store.structures.get(companyId, world.structure.id),
    liveStatements: await store.statements.page(companyId, 'live', window),
    sandboxStatements: await store.statements.page(companyId, 'sandbox', window),
    statementCount: await store.statements.count(companyId, 'live'),
    lines: await store.commissionLines.page(companyId, world.table.id, window),
    lineCount: await store.commissionLines.count(companyId, world.table.id),
    quotas: await store.quotas.list(companyId),
    quota: await store.quotas.get(companyId, world.quota.id),
    values: await store.quotaValues.page(companyId, world.quota.id, window),
    valueCount: await store.quotaValues.count(companyId, world.quota.id),
  }
}

/** What `readAll(world.company.id, world)` answers when the store holds `world` for that company. */
export function readsOf(world: World): Reads {
  const [user, boss] = world.users
  return {
    users: byId(world.users),
    userCount: 2,
    user,
    usersById: new Map([
      [user.id, user],
      [boss.id, boss],
    ]),
    usersByEmail: new Map([[user.email.toLowerCase(), user]]),
    apiKeys: [world.apiKey],
    attributes: [world.attribute],
    managers: [world.manager],
    groups: [world.group],
    metrics: [world.metric],
    tables: [world.table],
    table: world.table,
    tableByKey: world.table,
    records: [world.record],
    recordCount: 1,
    structures: [world.structure],
    structure: world.structure,
    liveStatements: [world.statements[0]],
    sandboxStatements: [world.statements[1]],
    statementCount: 1,
    lines: [world.line],
    lineCount: 1,
    quotas: [world.quota],
    quota: world.quota,
    values: [world.value],
    valueCount: 1,
  }
}

/** What `readAll` answers for a company that holds nothing under the ids it is given. */
export function nothingOf(): Reads {
  return {
    users: [],
    userCount: 0,
    user: null,
    usersById: new Map(),
    usersByEmail: new Map(),
    apiKeys: [],
    attributes: [],
    managers: [],
    groups: [],
    metrics: [],
    tables: [],
    table: null,
    tableByKey: null,
    records: [],
    recordCount: 0,
    structures: [],
    structure: null,
    liveStatements: [],
    sandboxStatements: [],
    statementCount: 0,
    lines: [],
    lineCount: 0,
    quotas: [],
    quota: null,
    values: [],
    valueCount: 0,
  }
}
