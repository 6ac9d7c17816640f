import { describe, expect, it } from 'vitest'
import { newId } from '../../../src/ids.ts'
import type { Store } from '../../../src/store/port.ts'
import { aQuota, aQuotaValue } from '../builders.ts'
import { storePerTest, expectConflict, type StoreAdapter } from './support.ts'
import { aStoredCompany } from './world.ts'

export function quotaValuesContract(adapter: StoreAdapter): void {
  describe('quotaValues', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

    it('refuses a second value for the same (quota, user, period), and inserts none of the batch', async () => {
      const companyId = await aStoredCompany(store)
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
      const companyId = await aStoredCompany(store)
      const quotaId = newId()
      const value = aQuotaValue(companyId, quotaId)
      await expectConflict(store.quotaValues.insertMany([value, { ...value, id: newId() }]))
      expect(await store.quotaValues.count(companyId, quotaId)).toBe(0)
    })

    it('allows the same user and period in another quota, and another period in the same quota', async () => {
      const companyId = await aStoredCompany(store)
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
}
