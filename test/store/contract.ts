import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { newId } from '../../src/ids.ts'
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
  QuotaValue,
  ReportingStructure,
  Statement,
  User,
  UserAttributeDefinition,
} from '../../src/store/model.ts'
import { type RowWindow, type Store, StoreConflictError } from '../../src/store/port.ts'
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
  minute,
} from './builders.ts'

/** How the contract gets a store of one adapter. */
export interface StoreFactory {
  /** A store to test. It may hold other data (a shared server): every test works in companies it creates. */
  create(): Promise<Store>
  /** Called after each test, once the suite has closed the store. */
  cleanup?(store: Store): Promise<void>
}

const ALL = { offset: 0, limit: 1000 }

/** Everything one company holds, one or two of each, as `populate` inserts it. */
interface World {
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

/**
 * Changes every field of a value returned by the store, deeply, to check that it was a fresh copy. Maps
 * (getMany, findByEmails) are changed too.
 */
function scramble(value: unknown): void {
  if (value instanceof Map) {
    for (const item of value.values()) scramble(item)
    value.set('scrambled', { id: 'scrambled' })
  } else if (Array.isArray(value)) {
    for (const item of value) scramble(item)
    value.push('scrambled')
  } else if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>
    for (const [key, field] of Object.entries(record)) {
      if (field !== null && typeof field === 'object') scramble(field)
      else record[key] = 'scrambled'
    }
    record.scrambled = true
  }
}

async function expectConflict(work: Promise<unknown>): Promise<void> {
  await expect(work).rejects.toBeInstanceOf(StoreConflictError)
}

/** A promise with its resolve function, to hold a transaction open at a chosen point. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void
  const promise = new Promise<void>((resolve) => {
    open = resolve
  })
  return { promise, open }
}

/** One of the id-ordered row sequences that `page` reads: statements, commission lines, quota values. */
interface PagedSequence<T extends { id: string; modified_at: string }> {
  name: string
  /** Creates two scopes (environments, data tables, quotas) of the company, the rows' and another. */
  scopes(store: Store, companyId: string): Promise<[string, string]>
  make(companyId: string, scope: string, modifiedAt: string): T
  insert(store: Store, rows: T[]): Promise<void>
  page(store: Store, companyId: string, scope: string, window: RowWindow): Promise<T[]>
  count(store: Store, companyId: string, scope: string): Promise<number>
}

const STATEMENTS: PagedSequence<Statement> = {
  name: 'statements',
  scopes: async () => ['live', 'sandbox'],
  make: (companyId, scope, modifiedAt) => aStatement(companyId, { environment: scope as Environment, modified_at: modifiedAt }),
  insert: (store, rows) => store.statements.insertMany(rows),
  page: (store, companyId, scope, window) => store.statements.page(companyId, scope as Environment, window),
  count: (store, companyId, scope) => store.statements.count(companyId, scope as Environment),
}

const COMMISSION_LINES: PagedSequence<CommissionLine> = {
  name: 'commissionLines',
  async scopes(store, companyId) {
    const tables = [aDataTable(companyId), aDataTable(companyId)]
    for (const table of tables) await store.dataTables.insert(table)
    return [tables[0].id, tables[1].id]
  },
  make: (companyId, scope, modifiedAt) => aCommissionLine(companyId, scope, { modified_at: modifiedAt }),
  insert: (store, rows) => store.commissionLines.insertMany(rows),
  page: (store, companyId, scope, window) => store.commissionLines.page(companyId, scope, window),
  count: (store, companyId, scope) => store.commissionLines.count(companyId, scope),
}

const QUOTA_VALUES: PagedSequence<QuotaValue> = {
  name: 'quotaValues',
  async scopes(store, companyId) {
    const quotas = [aQuota(companyId), aQuota(companyId)]
    for (const quota of quotas) await store.quotas.insert(quota)
    return [quotas[0].id, quotas[1].id]
  },
  make: (companyId, scope, modifiedAt) => aQuotaValue(companyId, scope, { modified_at: modifiedAt }),
  insert: (store, rows) => store.quotaValues.insertMany(rows),
  page: (store, companyId, scope, window) => store.quotaValues.page(companyId, scope, window),
  count: (store, companyId, scope) => store.quotaValues.count(companyId, scope),
}

/** What `readAll` answers. */
type Reads = Awaited<ReturnType<typeof readAll>>

/** Every read of the port for `companyId`, scoped by the ids of `world` (which may be another company's). */
async function readAll(store: Store, companyId: string, world: World) {
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
function readsOf(world: World): Reads {
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
function nothingOf(): Reads {
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

/** Declares the tests every Store adapter must pass. */
export function storeContract(name: string, factory: StoreFactory): void {
  describe(`store contract: ${name}`, () => {
    let store: Store

    beforeEach(async () => {
      store = await factory.create()
    })

    afterEach(async () => {
      await store.close()
      await factory.cleanup?.(store)
    })

    async function aStoredCompany(overrides: Partial<Company> = {}): Promise<string> {
      const company = aCompany(overrides)
      await store.companies.insert(company)
      return company.id
    }

    /** Inserts one of everything for a new company. Names given in `shared` may be reused by another company. */
    async function populate(shared: { email: string; tableKey: string; externalId: string; apiName: string }): Promise<World> {
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

    function populateTwo(): Promise<World[]> {
      const shared = { email: 'Shared@Example.com', tableKey: 'deals', externalId: 'deal-1', apiName: 'region' }
      return Promise.all([populate(shared), populate(shared)])
    }

    describe('round trips', () => {
      it('returns every record as it was written, through every read', async () => {
        const world = await populate({ email: 'ann@example.com', tableKey: 'deals', externalId: 'deal-1', apiName: 'region' })
        expect(await store.companies.get(world.company.id)).toStrictEqual(world.company)
        expect(await store.apiKeys.findByHash(world.apiKey.hash)).toStrictEqual(world.apiKey)
        expect(await readAll(store, world.company.id, world)).toStrictEqual(readsOf(world))
      })

      it('keeps nulls, empty collections, unicode and numbers exactly', async () => {
        const companyId = await aStoredCompany({ name: 'Société Générale — 日本' })
        const user = aUser(companyId, {
          name: null,
          role: null,
          currency: null,
          country: null,
          arrival_date: null,
          junior: null,
          attributes: {},
          email: 'zoë@exämple.com',
        })
        const statement = aStatement(companyId, {
          payment: 0.1 + 0.2,
          target: 0,
          target_achievement: 1e-9,
          achievement: Number.MAX_SAFE_INTEGER,
          metrics: { empty: [], nothing: null, deep: { a: [{ b: 'ü' }] } },
          dimensions: {},
        })
        await store.users.save(companyId, [user])
        await store.statements.insertMany([statement])
        expect(await store.companies.get(companyId)).toMatchObject({ name: 'Société Générale — 日本' })
        expect(await store.users.get(companyId, user.id)).toStrictEqual(user)
        expect(await store.statements.page(companyId, 'live', { limit: 10 })).toStrictEqual([statement])
      })

      it('answers null or empty for unknown ids', async () => {
        const companyId = await aStoredCompany()
        const unknown = newId()
        expect(await store.companies.get(unknown)).toBeNull()
        expect(await store.apiKeys.findByHash('f'.repeat(64))).toBeNull()
        expect(await store.users.get(companyId, unknown)).toBeNull()
        expect(await store.users.getMany(companyId, [])).toStrictEqual(new Map())
        expect(await store.users.findByEmails(companyId, [])).toStrictEqual(new Map())
        expect(await store.dataTables.get(companyId, unknown)).toBeNull()
        expect(await store.dataTables.getByKey(companyId, 'live', 'nope')).toBeNull()
        expect(await store.structures.get(companyId, unknown)).toBeNull()
        expect(await store.quotas.get(companyId, unknown)).toBeNull()
        expect(await store.records.list(companyId, unknown, ALL)).toStrictEqual([])
        expect(await store.records.count(companyId, unknown)).toBe(0)
      })

      it('returns fresh objects: changing one never changes the store', async () => {
        const world = await populate({ email: 'ann@example.com', tableKey: 'deals', externalId: 'deal-1', apiName: 'region' })
        const id = world.company.id
        const reads: Array<() => Promise<unknown>> = [
          () => store.companies.get(id),
          () => store.companies.list(),
          () => store.apiKeys.findByHash(world.apiKey.hash),
          () => readAll(store, id, world),
        ]
        for (const read of reads) {
          const first = await read()
          const copy = structuredClone(first)
          scramble(first)
          expect(await read()).toStrictEqual(copy)
        }
      })

      it('copies what it is given: changing a written object afterwards never changes the store', async () => {
        const companyId = await aStoredCompany()
        const user = aUser(companyId)
        const table = aDataTable(companyId)
        const record = aRecord(companyId, table.id)
        const statement = aStatement(companyId)
        const quota = aQuota(companyId)
        const value = aQuotaValue(companyId, quota.id)
        const written = structuredClone({ user, table, record, statement, quota, value })
        await store.users.save(companyId, [user])
        await store.dataTables.insert(table)
        await store.records.upsert(companyId, [record])
        await store.statements.insertMany([statement])
        await store.quotas.insert(quota)
        await store.quotaValues.insertMany([value])
        for (const object of [user, table, record, statement, quota, value]) scramble(object)
        expect({
          user: await store.users.get(companyId, written.user.id),
          table: await store.dataTables.get(companyId, written.table.id),
          record: (await store.records.list(companyId, written.table.id, ALL))[0],
          statement: (await store.statements.page(companyId, 'live', { limit: 10 }))[0],
          quota: await store.quotas.get(companyId, written.quota.id),
          value: (await store.quotaValues.page(companyId, written.quota.id, { limit: 10 }))[0],
        }).toStrictEqual(written)
      })
    })

    describe('companies', () => {
      it('lists companies in id order', async () => {
        const companies = [aCompany(), aCompany(), aCompany()]
        for (const company of companies.toReversed()) await store.companies.insert(company)
        const mine = new Set(companies.map((company) => company.id))
        const listed = (await store.companies.list()).filter((company) => mine.has(company.id))
        expect(listed).toStrictEqual(byId(companies))
      })

      it('deletes a company with everything it holds, and nothing of another company', async () => {
        const [doomed, kept] = await populateTwo()
        expect(await store.companies.delete(doomed.company.id)).toBe(true)

        expect(await store.companies.get(doomed.company.id)).toBeNull()
        expect((await store.companies.list()).map((company) => company.id)).not.toContain(doomed.company.id)
        expect(await store.apiKeys.findByHash(doomed.apiKey.hash)).toBeNull()
        expect(await readAll(store, doomed.company.id, doomed)).toStrictEqual(nothingOf())

        expect(await store.companies.get(kept.company.id)).toStrictEqual(kept.company)
        expect(await store.apiKeys.findByHash(kept.apiKey.hash)).toStrictEqual(kept.apiKey)
        expect(await readAll(store, kept.company.id, kept)).toStrictEqual(readsOf(kept))
      })

      it('answers false when deleting an unknown company', async () => {
        expect(await store.companies.delete(newId())).toBe(false)
      })

      it('removes what an interrupted deletion left of a company when it is deleted again', async () => {
        const [doomed, kept] = await populateTwo()
        expect(await store.companies.delete(doomed.company.id)).toBe(true)
        // What a deletion stopped after the company itself went would have left behind.
        await store.users.save(doomed.company.id, doomed.users)
        await store.statements.insertMany(doomed.statements)
        expect(await store.companies.delete(doomed.company.id)).toBe(false)
        expect(await readAll(store, doomed.company.id, doomed)).toStrictEqual(nothingOf())
        expect(await readAll(store, kept.company.id, kept)).toStrictEqual(readsOf(kept))
      })

      it('lets a deleted company be written again from scratch', async () => {
        const [world] = await populateTwo()
        await store.companies.delete(world.company.id)
        await store.companies.insert(world.company)
        await store.users.save(world.company.id, world.users)
        await store.quotaValues.insertMany([world.value])
        expect(await store.users.count(world.company.id)).toBe(2)
        expect(await store.quotaValues.count(world.company.id, world.quota.id)).toBe(1)
      })
    })

    describe('apiKeys', () => {
      it('finds a key by its hash whatever its company, and lists keys by company in id order', async () => {
        const [a, b] = [await aStoredCompany(), await aStoredCompany()]
        const keys = [anApiKey(a, newId()), anApiKey(a, newId()), anApiKey(a, newId())]
        const other = anApiKey(b, newId())
        for (const key of keys.toReversed()) await store.apiKeys.insert(key)
        await store.apiKeys.insert(other)
        expect(await store.apiKeys.findByHash(keys[1].hash)).toStrictEqual(keys[1])
        expect(await store.apiKeys.findByHash(other.hash)).toStrictEqual(other)
        expect(await store.apiKeys.list(a)).toStrictEqual(byId(keys))
        expect(await store.apiKeys.list(b)).toStrictEqual([other])
      })

      it('refuses a second key with the same hash', async () => {
        const [a, b] = [await aStoredCompany(), await aStoredCompany()]
        const key = anApiKey(a, newId())
        await store.apiKeys.insert(key)
        await expectConflict(store.apiKeys.insert(anApiKey(b, newId(), { hash: key.hash })))
        expect(await store.apiKeys.list(b)).toStrictEqual([])
      })
    })

    describe('users', () => {
      it('lists users in id order with offset windows, and counts them', async () => {
        const companyId = await aStoredCompany()
        const users = Array.from({ length: 5 }, () => aUser(companyId))
        await store.users.save(companyId, users.toReversed())
        const sorted = byId(users)
        expect(await store.users.list(companyId, ALL)).toStrictEqual(sorted)
        expect(await store.users.list(companyId, { offset: 0, limit: 2 })).toStrictEqual(sorted.slice(0, 2))
        expect(await store.users.list(companyId, { offset: 2, limit: 2 })).toStrictEqual(sorted.slice(2, 4))
        expect(await store.users.list(companyId, { offset: 4, limit: 2 })).toStrictEqual(sorted.slice(4))
        expect(await store.users.list(companyId, { offset: 5, limit: 2 })).toStrictEqual([])
        expect(await store.users.count(companyId)).toBe(5)
      })

      it('replaces a saved user by id', async () => {
        const companyId = await aStoredCompany()
        const user = aUser(companyId, { email: 'old@example.com' })
        await store.users.save(companyId, [user])
        const changed: User = { ...user, email: 'New@Example.com', name: 'Renamed', status: 'archived', attributes: { x: 1 } }
        await store.users.save(companyId, [changed])
        expect(await store.users.get(companyId, user.id)).toStrictEqual(changed)
        expect(await store.users.count(companyId)).toBe(1)
        expect(await store.users.findByEmails(companyId, ['old@example.com'])).toStrictEqual(new Map())
        expect(await store.users.findByEmails(companyId, ['new@example.com'])).toStrictEqual(new Map([['new@example.com', changed]]))
      })

      it('frees the old email of a user whose email changed', async () => {
        const companyId = await aStoredCompany()
        const user = aUser(companyId, { email: 'ann@example.com' })
        await store.users.save(companyId, [user])
        await store.users.save(companyId, [{ ...user, email: 'ann.smith@example.com' }])
        const newcomer = aUser(companyId, { email: 'ANN@example.com' })
        await store.users.save(companyId, [newcomer])
        expect(await store.users.findByEmails(companyId, ['ann@example.com'])).toStrictEqual(new Map([['ann@example.com', newcomer]]))
      })

      it('lets a user change only the case of their own email', async () => {
        const companyId = await aStoredCompany()
        const user = aUser(companyId, { email: 'ann@example.com' })
        await store.users.save(companyId, [user])
        await store.users.save(companyId, [{ ...user, email: 'Ann@Example.com' }])
        expect(await store.users.get(companyId, user.id)).toMatchObject({ email: 'Ann@Example.com' })
      })

      it('gets the users that exist among many ids, by id', async () => {
        const companyId = await aStoredCompany()
        const [ann, bob, eve] = [aUser(companyId), aUser(companyId), aUser(companyId)]
        await store.users.save(companyId, [ann, bob, eve])
        const found = await store.users.getMany(companyId, [eve.id, newId(), ann.id, ann.id])
        expect(found).toStrictEqual(
          new Map([
            [eve.id, eve],
            [ann.id, ann],
          ]),
        )
      })

      it('finds users by email case-insensitively, keyed by lower-case email', async () => {
        const companyId = await aStoredCompany()
        const ann = aUser(companyId, { email: 'Ann.Smith@Example.com' })
        const bob = aUser(companyId, { email: 'bob@example.com' })
        await store.users.save(companyId, [ann, bob])
        const found = await store.users.findByEmails(companyId, ['ANN.SMITH@EXAMPLE.COM', 'Bob@Example.Com', 'nobody@example.com', 'bob@example.com'])
        expect(found).toStrictEqual(
          new Map([
            ['ann.smith@example.com', ann],
            ['bob@example.com', bob],
          ]),
        )
      })

      it('refuses an email already used in the company, whatever its case, and saves none of the batch', async () => {
        const companyId = await aStoredCompany()
        const ann = aUser(companyId, { email: 'ann@example.com' })
        await store.users.save(companyId, [ann])
        const fresh = aUser(companyId)
        await expectConflict(store.users.save(companyId, [fresh, aUser(companyId, { email: 'ANN@Example.COM' })]))
        expect(await store.users.get(companyId, fresh.id)).toBeNull()
        expect(await store.users.list(companyId, ALL)).toStrictEqual([ann])
      })

      it('refuses a batch that holds the same email twice', async () => {
        const companyId = await aStoredCompany()
        await expectConflict(
          store.users.save(companyId, [aUser(companyId, { email: 'eve@example.com' }), aUser(companyId, { email: 'Eve@example.com' })]),
        )
        expect(await store.users.count(companyId)).toBe(0)
      })

      it('refuses changing an email to one another user of the company has', async () => {
        const companyId = await aStoredCompany()
        const [ann, bob] = [aUser(companyId, { email: 'ann@example.com' }), aUser(companyId, { email: 'bob@example.com' })]
        await store.users.save(companyId, [ann, bob])
        await expectConflict(store.users.save(companyId, [{ ...bob, email: 'Ann@example.com' }]))
        expect(await store.users.get(companyId, bob.id)).toStrictEqual(bob)
      })

      it('allows the same email in two companies', async () => {
        const [a, b] = [await aStoredCompany(), await aStoredCompany()]
        const inA = aUser(a, { email: 'same@example.com' })
        const inB = aUser(b, { email: 'SAME@example.com' })
        await store.users.save(a, [inA])
        await store.users.save(b, [inB])
        expect(await store.users.findByEmails(a, ['same@example.com'])).toStrictEqual(new Map([['same@example.com', inA]]))
        expect(await store.users.findByEmails(b, ['same@example.com'])).toStrictEqual(new Map([['same@example.com', inB]]))
      })
    })

    describe('user attributes and custom metrics', () => {
      it('lists attribute definitions in creation order', async () => {
        const companyId = await aStoredCompany()
        const definitions = [aUserAttribute(companyId), aUserAttribute(companyId, { type: 'amount' }), aUserAttribute(companyId)]
        for (const definition of definitions) await store.userAttributes.insert(definition)
        expect(await store.userAttributes.list(companyId)).toStrictEqual(definitions)
      })

      it('lists custom metrics in creation order', async () => {
        const companyId = await aStoredCompany()
        const metrics = [
          aMetric(companyId),
          aMetric(companyId, { kind: 'enum', currencies: null, enum_values: ['low', 'high'] }),
          aMetric(companyId, { kind: 'percentage', currencies: null }),
        ]
        for (const metric of metrics) await store.metrics.insert(metric)
        expect(await store.metrics.list(companyId)).toStrictEqual(metrics)
      })
    })

    describe('attributions', () => {
      const kinds = [
        {
          name: 'managers',
          make: (companyId: string, userId: string) => aManagerAttribution(companyId, userId, newId()),
          replace: (companyId: string, userIds: string[], rows: Array<ManagerAttribution | GroupAttribution>) =>
            store.attributions.replaceManagers(companyId, userIds, rows as ManagerAttribution[]),
          list: (companyId: string) => store.attributions.listManagers(companyId),
          listOther: (companyId: string) => store.attributions.listGroups(companyId),
        },
        {
          name: 'groups',
          make: (companyId: string, userId: string) => aGroupAttribution(companyId, userId),
          replace: (companyId: string, userIds: string[], rows: Array<ManagerAttribution | GroupAttribution>) =>
            store.attributions.replaceGroups(companyId, userIds, rows as GroupAttribution[]),
          list: (companyId: string) => store.attributions.listGroups(companyId),
          listOther: (companyId: string) => store.attributions.listManagers(companyId),
        },
      ]

      for (const kind of kinds) {
        it(`replaces the ${kind.name} of the given users only, and lists them in id order`, async () => {
          const companyId = await aStoredCompany()
          const [ann, bob, eve] = [newId(), newId(), newId()]
          const first = [kind.make(companyId, ann), kind.make(companyId, ann), kind.make(companyId, bob), kind.make(companyId, eve)]
          await kind.replace(companyId, [ann, bob, eve], first.toReversed())
          expect(await kind.list(companyId)).toStrictEqual(byId(first))

          const annAgain = kind.make(companyId, ann)
          await kind.replace(companyId, [ann], [annAgain])
          expect(await kind.list(companyId)).toStrictEqual(byId([first[2], first[3], annAgain]))

          await kind.replace(companyId, [bob, newId()], [])
          expect(await kind.list(companyId)).toStrictEqual(byId([first[3], annAgain]))
          expect(await kind.listOther(companyId)).toStrictEqual([])
        })

        it(`removes the ${kind.name} of many users at once: a reader sees all of them or none`, async () => {
          const companyId = await aStoredCompany()
          const userIds = Array.from({ length: 2000 }, () => newId())
          await kind.replace(
            companyId,
            userIds,
            userIds.map((userId) => kind.make(companyId, userId)),
          )
          const removal = { over: false }
          const removing = kind.replace(companyId, userIds, []).finally(() => {
            removal.over = true
          })
          const seen = new Set<number>()
          while (!removal.over) seen.add((await kind.list(companyId)).length)
          await removing
          seen.add((await kind.list(companyId)).length)
          expect([...seen].filter((count) => count !== 0 && count !== userIds.length)).toStrictEqual([])
          expect(seen.has(0)).toBe(true)
        })
      }
    })

    describe('data tables and records', () => {
      it('gets a table by id and by (environment, key), and lists tables in id order', async () => {
        const companyId = await aStoredCompany()
        const live = aDataTable(companyId, { key: 'deals' })
        const sandbox = aDataTable(companyId, { key: 'deals', environment: 'sandbox' })
        const other = aDataTable(companyId, { key: 'invoices' })
        for (const table of [other, sandbox, live]) await store.dataTables.insert(table)
        expect(await store.dataTables.get(companyId, sandbox.id)).toStrictEqual(sandbox)
        expect(await store.dataTables.getByKey(companyId, 'live', 'deals')).toStrictEqual(live)
        expect(await store.dataTables.getByKey(companyId, 'sandbox', 'deals')).toStrictEqual(sandbox)
        expect(await store.dataTables.getByKey(companyId, 'sandbox', 'invoices')).toBeNull()
        expect(await store.dataTables.list(companyId)).toStrictEqual(byId([live, sandbox, other]))
      })

      it('lists the records of one table in id order with offset windows, and counts them', async () => {
        const companyId = await aStoredCompany()
        const [table, other] = [aDataTable(companyId), aDataTable(companyId)]
        const records = Array.from({ length: 5 }, () => aRecord(companyId, table.id))
        await store.records.upsert(companyId, records.toReversed())
        await store.records.upsert(companyId, [aRecord(companyId, other.id)])
        const sorted = byId(records)
        expect(await store.records.list(companyId, table.id, ALL)).toStrictEqual(sorted)
        expect(await store.records.list(companyId, table.id, { offset: 1, limit: 3 })).toStrictEqual(sorted.slice(1, 4))
        expect(await store.records.list(companyId, table.id, { offset: 5, limit: 3 })).toStrictEqual([])
        expect(await store.records.count(companyId, table.id)).toBe(5)
        expect(await store.records.count(companyId, other.id)).toBe(1)
      })

      it('replaces a record with the same external id, keeping its id and created_at', async () => {
        const companyId = await aStoredCompany()
        const table = aDataTable(companyId)
        const original = aRecord(companyId, table.id, { external_id: 'deal-7', created_at: minute(1), modified_at: minute(1) })
        const untouched = aRecord(companyId, table.id)
        await store.records.upsert(companyId, [original, untouched])
        const replacement = aRecord(companyId, table.id, {
          external_id: 'deal-7',
          values: { deal_id: 'deal-7', deal_name: 'Renamed' },
          overrides: { deal_name: 'By hand' },
          created_at: minute(9),
          modified_at: minute(9),
        })
        await store.records.upsert(companyId, [replacement])
        const expected = { ...replacement, id: original.id, created_at: original.created_at }
        expect(await store.records.list(companyId, table.id, ALL)).toStrictEqual(byId([expected, untouched]))
        expect(await store.records.count(companyId, table.id)).toBe(2)
      })

      it('applies a batch in order: a later record with the same external id replaces an earlier one', async () => {
        const companyId = await aStoredCompany()
        const table = aDataTable(companyId)
        const first = aRecord(companyId, table.id, { external_id: 'deal-1' })
        const second = aRecord(companyId, table.id, { external_id: 'deal-1', values: { deal_id: 'deal-1', v: 2 } })
        await store.records.upsert(companyId, [first, second])
        expect(await store.records.list(companyId, table.id, ALL)).toStrictEqual([{ ...second, id: first.id, created_at: first.created_at }])
      })

      it('keeps records of two tables apart even when their external ids match', async () => {
        const companyId = await aStoredCompany()
        const [one, two] = [aDataTable(companyId), aDataTable(companyId)]
        const inOne = aRecord(companyId, one.id, { external_id: 'x' })
        const inTwo = aRecord(companyId, two.id, { external_id: 'x' })
        await store.records.upsert(companyId, [inOne, inTwo])
        expect(await store.records.list(companyId, one.id, ALL)).toStrictEqual([inOne])
        expect(await store.records.list(companyId, two.id, ALL)).toStrictEqual([inTwo])
      })
    })

    describe('reporting structures', () => {
      it('gets a structure by id and lists them in id order', async () => {
        const companyId = await aStoredCompany()
        const structures = [
          aStructure(companyId),
          aStructure(companyId, { type: 'record_reporting', data_table_id: newId(), field_keys: ['a', 'b'] }),
          aStructure(companyId, { environment: 'sandbox', metric_keys: [] }),
        ]
        for (const structure of structures.toReversed()) await store.structures.insert(structure)
        expect(await store.structures.get(companyId, structures[1].id)).toStrictEqual(structures[1])
        expect(await store.structures.list(companyId)).toStrictEqual(byId(structures))
      })
    })

    describe('quotas and quota values', () => {
      it('gets a quota by id and lists them in id order', async () => {
        const companyId = await aStoredCompany()
        const quotas = [aQuota(companyId), aQuota(companyId, { frequency: 'quarterly', type: 'float' }), aQuota(companyId)]
        for (const quota of quotas.toReversed()) await store.quotas.insert(quota)
        expect(await store.quotas.get(companyId, quotas[1].id)).toStrictEqual(quotas[1])
        expect(await store.quotas.list(companyId)).toStrictEqual(byId(quotas))
      })

      it('changes the type of a quota and nothing of its values', async () => {
        const companyId = await aStoredCompany()
        const quota = aQuota(companyId, { modified_at: minute(1) })
        const values = [aQuotaValue(companyId, quota.id, { modified_at: minute(2) }), aQuotaValue(companyId, quota.id, { modified_at: minute(3) })]
        await store.quotas.insert(quota)
        await store.quotaValues.insertMany(values)
        expect(await store.quotas.setType(companyId, quota.id, 'percentage', minute(10))).toBe(true)
        expect(await store.quotas.get(companyId, quota.id)).toStrictEqual({ ...quota, type: 'percentage', modified_at: minute(10) })
        expect(await store.quotaValues.page(companyId, quota.id, { limit: 10 })).toStrictEqual(byId(values))
      })

      it('answers false when setting the type of an unknown quota', async () => {
        const companyId = await aStoredCompany()
        expect(await store.quotas.setType(companyId, newId(), 'float', minute(1))).toBe(false)
      })

      it('refuses a second value for the same (quota, user, period), and inserts none of the batch', async () => {
        const companyId = await aStoredCompany()
        const quota = aQuota(companyId)
        await store.quotas.insert(quota)
        const value = aQuotaValue(companyId, quota.id, { period: '2024-03' })
        await store.quotaValues.insertMany([value])
        const fresh = aQuotaValue(companyId, quota.id)
        const duplicate = aQuotaValue(companyId, quota.id, { user_id: value.user_id, period: '2024-03', value: 1 })
        await expectConflict(store.quotaValues.insertMany([fresh, duplicate]))
        expect(await store.quotaValues.page(companyId, quota.id, { limit: 10 })).toStrictEqual([value])
      })

      it('refuses a batch that holds the same (quota, user, period) twice', async () => {
        const companyId = await aStoredCompany()
        const quotaId = newId()
        const value = aQuotaValue(companyId, quotaId)
        await expectConflict(store.quotaValues.insertMany([value, { ...value, id: newId() }]))
        expect(await store.quotaValues.count(companyId, quotaId)).toBe(0)
      })

      it('allows the same user and period in another quota, and another period in the same quota', async () => {
        const companyId = await aStoredCompany()
        const [one, two] = [newId(), newId()]
        const userId = newId()
        const values = [
          aQuotaValue(companyId, one, { user_id: userId, period: '2024-01' }),
          aQuotaValue(companyId, one, { user_id: userId, period: '2024-02' }),
          aQuotaValue(companyId, two, { user_id: userId, period: '2024-01' }),
        ]
        await store.quotaValues.insertMany(values)
        expect(await store.quotaValues.count(companyId, one)).toBe(2)
        expect(await store.quotaValues.count(companyId, two)).toBe(1)
      })
    })

    describe('pages', () => {
      for (const sequence of [STATEMENTS, COMMISSION_LINES, QUOTA_VALUES] as Array<PagedSequence<{ id: string; modified_at: string }>>) {
        describe(`${sequence.name}.page`, () => {
          let companyId: string
          let scope: string
          /** Six rows in id order, whose times are not in id order and where two times are equal. */
          let rows: Array<{ id: string; modified_at: string }>

          beforeEach(async () => {
            companyId = await aStoredCompany()
            const [mine, other] = await sequence.scopes(store, companyId)
            scope = mine
            rows = byId([3, 1, 5, 2, 4, 3].map((at) => sequence.make(companyId, scope, minute(at))))
            await sequence.insert(store, rows.toReversed())
            await sequence.insert(store, [sequence.make(companyId, other, minute(3))])
            // Another company's rows under the same scope: statements share environments.
            const stranger = await aStoredCompany()
            await sequence.insert(store, [sequence.make(stranger, scope, minute(3))])
          })

          const page = (window: RowWindow) => sequence.page(store, companyId, scope, window)
          const modified = (predicate: (at: string) => boolean) => rows.filter((row) => predicate(row.modified_at))

          it('returns the rows of the scope in id order, at most `limit`', async () => {
            expect(await page({ limit: 100 })).toStrictEqual(rows)
            expect(await page({ limit: 2 })).toStrictEqual(rows.slice(0, 2))
            expect(await page({ limit: 6 })).toStrictEqual(rows)
            expect(await page({ limit: 0 })).toStrictEqual([])
          })

          it('counts the rows of the scope', async () => {
            expect(await sequence.count(store, companyId, scope)).toBe(6)
          })

          it('starts after `afterId`, which need not be the id of a row', async () => {
            expect(await page({ afterId: rows[1].id, limit: 100 })).toStrictEqual(rows.slice(2))
            expect(await page({ afterId: rows[1].id, limit: 2 })).toStrictEqual(rows.slice(2, 4))
            expect(await page({ afterId: rows[5].id, limit: 100 })).toStrictEqual([])
            expect(await page({ afterId: '0'.repeat(24), limit: 100 })).toStrictEqual(rows)
            expect(await page({ afterId: newId(), limit: 100 })).toStrictEqual([])
          })

          it('walks the whole scope page by page', async () => {
            const seen: Array<{ id: string; modified_at: string }> = []
            let afterId: string | undefined
            for (let pages = 0; pages < 10; pages++) {
              const window: RowWindow = afterId === undefined ? { limit: 4 } : { afterId, limit: 4 }
              const found = await page(window)
              seen.push(...found)
              if (found.length < 4) break
              afterId = found[found.length - 1].id
            }
            expect(seen).toStrictEqual(rows)
          })

          it('bounds the modification time from below, inclusively or not', async () => {
            const at = minute(3)
            expect(await page({ limit: 100, modifiedAfter: { at, inclusive: true } })).toStrictEqual(modified((time) => time >= at))
            expect(await page({ limit: 100, modifiedAfter: { at, inclusive: false } })).toStrictEqual(modified((time) => time > at))
            expect(await page({ limit: 100, modifiedAfter: { at: minute(5), inclusive: false } })).toStrictEqual([])
          })

          it('bounds the modification time from above, inclusively or not', async () => {
            const at = minute(3)
            expect(await page({ limit: 100, modifiedBefore: { at, inclusive: true } })).toStrictEqual(modified((time) => time <= at))
            expect(await page({ limit: 100, modifiedBefore: { at, inclusive: false } })).toStrictEqual(modified((time) => time < at))
            expect(await page({ limit: 100, modifiedBefore: { at: minute(1), inclusive: false } })).toStrictEqual([])
          })

          it('compares times to the millisecond', async () => {
            const justAfter = new Date(Date.parse(minute(3)) + 1).toISOString()
            const justBefore = new Date(Date.parse(minute(3)) - 1).toISOString()
            expect(await page({ limit: 100, modifiedAfter: { at: justBefore, inclusive: false } })).toStrictEqual(modified((time) => time >= minute(3)))
            expect(await page({ limit: 100, modifiedBefore: { at: justAfter, inclusive: false } })).toStrictEqual(modified((time) => time <= minute(3)))
          })

          it('combines both time bounds', async () => {
            const window: RowWindow = {
              limit: 100,
              modifiedAfter: { at: minute(1), inclusive: false },
              modifiedBefore: { at: minute(4), inclusive: true },
            }
            expect(await page(window)).toStrictEqual(modified((time) => time > minute(1) && time <= minute(4)))
            const instant = { at: minute(3), inclusive: true }
            expect(await page({ limit: 100, modifiedAfter: instant, modifiedBefore: instant })).toStrictEqual(
              modified((time) => time === minute(3)),
            )
            const empty = { limit: 100, modifiedAfter: { at: minute(3), inclusive: false }, modifiedBefore: { at: minute(3), inclusive: true } }
            expect(await page(empty)).toStrictEqual([])
          })

          it('combines afterId, time bounds and limit', async () => {
            const window: RowWindow = {
              afterId: rows[0].id,
              limit: 2,
              modifiedAfter: { at: minute(2), inclusive: true },
              modifiedBefore: { at: minute(5), inclusive: false },
            }
            const matching = rows.slice(1).filter((row) => row.modified_at >= minute(2) && row.modified_at < minute(5))
            expect(matching.length).toBeGreaterThan(2)
            expect(await page(window)).toStrictEqual(matching.slice(0, 2))
            const last = matching[1].id
            expect(await page({ ...window, afterId: last })).toStrictEqual(matching.slice(2, 4))
          })
        })
      }
    })

    describe('currencies in use', () => {
      it('statements: the currencies of those with a payment, and per metric those of its amounts and numbers', async () => {
        const companyId = await aStoredCompany()
        const other = await aStoredCompany()
        await store.statements.insertMany([
          aStatement(companyId, { currency: 'USD', metrics: { bonus: { value: 1, currency: 'GBP' }, rate: 0.5, tier: 'gold', none: null } }),
          aStatement(companyId, { currency: 'EUR', metrics: { bonus: { value: 2 }, rate: 0.7, odd: { value: 'x', currency: 'JPY' } } }),
          aStatement(companyId, { currency: 'CHF', payment: null, metrics: {} }),
          aStatement(companyId, { currency: 'SEK', environment: 'sandbox', metrics: { bonus: { value: 3, currency: 'SEK' } } }),
          aStatement(other, { currency: 'NOK', metrics: { bonus: { value: 4, currency: 'NOK' } } }),
        ])
        expect(await store.statements.currenciesInUse(companyId, 'live')).toStrictEqual({
          rows: ['EUR', 'USD'],
          metrics: { bonus: ['EUR', 'GBP'], rate: ['EUR', 'USD'] },
        })
        expect(await store.statements.currenciesInUse(companyId, 'sandbox')).toStrictEqual({ rows: ['SEK'], metrics: { bonus: ['SEK'] } })
        expect(await store.statements.currenciesInUse(await aStoredCompany(), 'live')).toStrictEqual({ rows: [], metrics: {} })
      })

      it("commission lines: the table's lines' currencies, per metric, and per record value that is an amount", async () => {
        const companyId = await aStoredCompany()
        const [table, otherTable] = [aDataTable(companyId), aDataTable(companyId, { key: 'other' })]
        await store.dataTables.insert(table)
        await store.dataTables.insert(otherTable)
        await store.commissionLines.insertMany([
          aCommissionLine(companyId, table.id, { currency: 'USD', metrics: { bonus: 3 }, record_values: { amount: { value: 5, currency: 'GBP' }, count: 3, name: 'x' } }),
          aCommissionLine(companyId, table.id, { currency: 'EUR', metrics: { bonus: { value: 1, currency: 'JPY' } }, record_values: { amount: { value: 6, currency: 'EUR' }, fee: { value: 1 } } }),
          aCommissionLine(companyId, otherTable.id, { currency: 'SEK', metrics: { bonus: 1 }, record_values: { amount: { value: 1, currency: 'SEK' } } }),
        ])
        expect(await store.commissionLines.currenciesInUse(companyId, table.id)).toStrictEqual({
          rows: ['EUR', 'USD'],
          metrics: { bonus: ['JPY', 'USD'] },
          recordValues: { amount: ['EUR', 'GBP'] },
        })
        expect(await store.commissionLines.currenciesInUse(await aStoredCompany(), table.id)).toStrictEqual({ rows: [], metrics: {}, recordValues: {} })
      })
    })

    describe('tenant isolation', () => {
      it("never reads another company's rows, even given that company's ids and names", async () => {
        const [a, b] = await populateTwo()
        expect(await readAll(store, a.company.id, a)).toStrictEqual(readsOf(a))
        expect(await readAll(store, b.company.id, b)).toStrictEqual(readsOf(b))
        const crossed = await readAll(store, a.company.id, b)
        // B's ids and names, asked in A: only A's own rows answer the company-wide lists and the shared names.
        expect(crossed).toStrictEqual({
          ...nothingOf(),
          users: byId(a.users),
          userCount: 2,
          usersByEmail: new Map([[a.users[0].email.toLowerCase(), a.users[0]]]),
          apiKeys: [a.apiKey],
          attributes: [a.attribute],
          managers: [a.manager],
          groups: [a.group],
          metrics: [a.metric],
          tables: [a.table],
          tableByKey: a.table,
          structures: [a.structure],
          liveStatements: [a.statements[0]],
          sandboxStatements: [a.statements[1]],
          statementCount: 1,
          quotas: [a.quota],
        })
      })

      it("never writes another company's rows, even given that company's ids", async () => {
        const [a, b] = await populateTwo()
        const companyId = a.company.id
        expect(await store.quotas.setType(companyId, b.quota.id, 'float', minute(30))).toBe(false)
        await store.attributions.replaceManagers(companyId, [b.users[0].id], [])
        await store.attributions.replaceGroups(companyId, [b.users[0].id], [])
        await store.records.upsert(companyId, [aRecord(companyId, b.table.id, { external_id: b.record.external_id })])
        // Whether a user with B's id may be saved in A is the adapter's choice; B's user must not change.
        const saved = await store.users
          .save(companyId, [{ ...b.users[1], company_id: companyId, email: 'taken@example.com' }])
          .then(() => 'saved', (error: unknown) => error)
        expect(saved === 'saved' || saved instanceof StoreConflictError).toBe(true)
        expect(await store.companies.get(b.company.id)).toStrictEqual(b.company)
        expect(await readAll(store, b.company.id, b)).toStrictEqual(readsOf(b))
      })
    })

    describe('transaction', () => {
      it('commits when the work resolves, and answers its result', async () => {
        const company = aCompany()
        const user = aUser(company.id)
        const result = await store.transaction(async (tx) => {
          await tx.companies.insert(company)
          await tx.users.save(company.id, [user])
          expect(await tx.users.get(company.id, user.id)).toStrictEqual(user)
          return 'done'
        })
        expect(result).toBe('done')
        expect(await store.companies.get(company.id)).toStrictEqual(company)
        expect(await store.users.get(company.id, user.id)).toStrictEqual(user)
      })

      it('rolls back every write when the work throws after several of them', async () => {
        const companyId = await aStoredCompany()
        const kept = aUser(companyId, { email: 'kept@example.com' })
        await store.users.save(companyId, [kept])
        const quota = aQuota(companyId)
        const company = aCompany()
        const failure = new Error('boom')
        await expect(
          store.transaction(async (tx) => {
            await tx.companies.insert(company)
            await tx.users.save(companyId, [{ ...kept, name: 'Changed' }, aUser(companyId)])
            await tx.quotas.insert(quota)
            await tx.quotaValues.insertMany([aQuotaValue(companyId, quota.id)])
            await tx.quotas.setType(companyId, quota.id, 'float', minute(5))
            await tx.statements.insertMany([aStatement(companyId)])
            throw failure
          }),
        ).rejects.toBe(failure)
        expect(await store.companies.get(company.id)).toBeNull()
        expect(await store.users.list(companyId, ALL)).toStrictEqual([kept])
        expect(await store.quotas.get(companyId, quota.id)).toBeNull()
        expect(await store.quotaValues.count(companyId, quota.id)).toBe(0)
        expect(await store.statements.count(companyId, 'live')).toBe(0)
        // The store is usable afterwards.
        await store.quotas.insert(quota)
        expect(await store.quotas.get(companyId, quota.id)).toStrictEqual(quota)
      })

      it('rolls back a company deletion', async () => {
        const [world] = await populateTwo()
        await expect(
          store.transaction(async (tx) => {
            expect(await tx.companies.delete(world.company.id)).toBe(true)
            throw new Error('undo')
          }),
        ).rejects.toThrow('undo')
        expect(await readAll(store, world.company.id, world)).toStrictEqual(readsOf(world))
      })

      it('rolls back the whole transaction when a write inside breaks a uniqueness rule', async () => {
        const companyId = await aStoredCompany()
        const ann = aUser(companyId, { email: 'ann@example.com' })
        await store.users.save(companyId, [ann])
        const quota = aQuota(companyId)
        const bob = aUser(companyId)
        await expectConflict(
          store.transaction(async (tx) => {
            await tx.quotas.insert(quota)
            await tx.users.save(companyId, [bob])
            await tx.users.save(companyId, [aUser(companyId, { email: 'Ann@example.com' })])
          }),
        )
        expect(await store.quotas.get(companyId, quota.id)).toBeNull()
        expect(await store.users.list(companyId, ALL)).toStrictEqual([ann])
      })

      it('keeps a failed call inside a transaction atomic: none of its writes is applied', async () => {
        const companyId = await aStoredCompany()
        const quota = aQuota(companyId)
        await store.quotas.insert(quota)
        const taken = aQuotaValue(companyId, quota.id)
        await store.quotaValues.insertMany([taken])
        const fresh = aQuotaValue(companyId, quota.id)
        // An adapter may go on with the transaction after the refused call, or refuse to commit it: either way
        // the refused call left nothing.
        await store
          .transaction(async (tx) => {
            await expectConflict(tx.quotaValues.insertMany([fresh, { ...taken, id: newId() }]))
          })
          .catch(() => undefined)
        expect(await store.quotaValues.page(companyId, quota.id, { limit: 10 })).toStrictEqual([taken])
      })

      it('lets the work nest transactions on the store it is given, as part of the one transaction', async () => {
        const companyId = await aStoredCompany()
        const [ann, bob] = [aUser(companyId), aUser(companyId)]
        const nested = await store.transaction(async (tx) => {
          await tx.users.save(companyId, [ann])
          return tx.transaction(async (inner) => {
            await inner.users.save(companyId, [bob])
            return inner.users.count(companyId)
          })
        })
        expect(nested).toBe(2)
        expect(await store.users.list(companyId, ALL)).toStrictEqual(byId([ann, bob]))

        const eve = aUser(companyId)
        await expect(
          store.transaction(async (tx) => {
            await tx.transaction((inner) => inner.users.save(companyId, [eve]))
            throw new Error('after the nested one')
          }),
        ).rejects.toThrow('after the nested one')
        expect(await store.users.get(companyId, eve.id)).toBeNull()
      })

      it('shows no other reader a part of a transaction', async () => {
        const [one, two] = [aCompany(), aCompany()]
        const wrote = gate()
        const release = gate()
        const running = store.transaction(async (tx) => {
          await tx.companies.insert(one)
          wrote.open()
          await release.promise
          await tx.companies.insert(two)
        })
        await wrote.promise
        // Read while the transaction is open; an adapter may answer at once or once it is over.
        const seen = Promise.all([store.companies.get(one.id), store.companies.get(two.id)])
        release.open()
        await running
        const [first, second] = await seen
        expect([first, second]).toSatisfy(
          ([x, y]: Array<Company | null>) => (x === null && y === null) || (x !== null && y !== null),
          'both companies or neither',
        )
        expect(await store.companies.get(two.id)).toStrictEqual(two)
      })

      it('serializes transactions: each one sees the writes of those before it', async () => {
        const companyId = await aStoredCompany()
        const quota = aQuota(companyId)
        await store.quotas.insert(quota)
        const userId = newId()
        // Each transaction reads the count, then writes the period it names: two overlapping ones would collide.
        await Promise.all(
          Array.from({ length: 5 }, () =>
            store.transaction(async (tx) => {
              const count = await tx.quotaValues.count(companyId, quota.id)
              await tx.quotaValues.insertMany([aQuotaValue(companyId, quota.id, { user_id: userId, period: String(2020 + count) })])
            }),
          ),
        )
        const values = await store.quotaValues.page(companyId, quota.id, { limit: 10 })
        expect(values.map((value) => value.period).toSorted()).toStrictEqual(['2020', '2021', '2022', '2023', '2024'])
      })
    })

    describe('lifecycle', () => {
      it('answers ping while open', async () => {
        await expect(store.ping()).resolves.toBeUndefined()
      })

      it('closes idempotently, and ping fails once closed', async () => {
        await store.close()
        await store.close()
        await expect(store.ping()).rejects.toBeInstanceOf(Error)
      })
    })
  })
}
