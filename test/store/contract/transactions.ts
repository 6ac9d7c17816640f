import { describe, expect, it } from 'vitest'
import { newId } from '../../../src/ids.ts'
import type { Company } from '../../../src/store/model.ts'
import type { Store } from '../../../src/store/port.ts'
import { aCompany, aQuota, aQuotaValue, aStatement, aUser, byId, minute } from '../builders.ts'
import { storePerTest, expectConflict, gate, ALL, type StoreAdapter } from './support.ts'
import { aStoredCompany, populateTwo, readAll, readsOf } from './world.ts'

export function transactionsContract(adapter: StoreAdapter): void {
  describe('transaction', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

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
      const companyId = await aStoredCompany(store)
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
      const [world] = await populateTwo(store)
      await expect(
        store.transaction(async (tx) => {
          expect(await tx.companies.delete(world.company.id)).toBe(true)
          throw new Error('undo')
        }),
      ).rejects.toThrow('undo')
      expect(await readAll(store, world.company.id, world)).toStrictEqual(readsOf(world))
    })

    it('rolls back the whole transaction when a write inside breaks a uniqueness rule', async () => {
      const companyId = await aStoredCompany(store)
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
      const companyId = await aStoredCompany(store)
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
      const companyId = await aStoredCompany(store)
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
      const companyId = await aStoredCompany(store)
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
}
