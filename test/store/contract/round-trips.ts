import { describe, expect, it } from 'vitest'
import { newId } from '../../../src/ids.ts'
import type { Store } from '../../../src/store/port.ts'
import { aDataTable, aQuota, aQuotaValue, aRecord, aStatement, aUser } from '../builders.ts'
import { storePerTest, scramble, ALL, type StoreAdapter } from './support.ts'
import { aStoredCompany, populate, readAll, readsOf } from './world.ts'

export function roundTripsContract(adapter: StoreAdapter): void {
  describe('round trips', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

    it('returns every record as it was written, through every read', async () => {
      const world = await populate(store, { email: 'ann@example.com', tableKey: 'deals', externalId: 'deal-1', apiName: 'region' })
      expect(await store.companies.get(world.company.id)).toStrictEqual(world.company)
      expect(await store.apiKeys.findByHash(world.apiKey.hash)).toStrictEqual(world.apiKey)
      expect(await readAll(store, world.company.id, world)).toStrictEqual(readsOf(world))
    })

    it('keeps nulls, empty collections, unicode and numbers exactly', async () => {
      const companyId = await aStoredCompany(store, { name: 'Société Générale — 日本' })
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
      const companyId = await aStoredCompany(store)
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
      const world = await populate(store, { email: 'ann@example.com', tableKey: 'deals', externalId: 'deal-1', apiName: 'region' })
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
      const companyId = await aStoredCompany(store)
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
}
