import { describe, expect, it } from 'vitest'
import { newId } from '../../../src/ids.ts'
import type { Store } from '../../../src/store/port.ts'
import { aQuota, aQuotaValue, byId, minute } from '../builders.ts'
import { storePerTest, type StoreAdapter } from './support.ts'
import { aStoredCompany } from './world.ts'

export function quotasContract(adapter: StoreAdapter): void {
  describe('quotas', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

    it('gets a quota by id and lists them in id order', async () => {
      const companyId = await aStoredCompany(store)
      const quotas = [aQuota(companyId), aQuota(companyId, { frequency: 'quarterly', type: 'float' }), aQuota(companyId)]
      for (const quota of quotas.toReversed()) await store.quotas.insert(quota)
      expect(await store.quotas.get(companyId, quotas[1].id)).toStrictEqual(quotas[1])
      expect(await store.quotas.list(companyId)).toStrictEqual(byId(quotas))
    })

    it('changes the type of a quota and nothing of its values', async () => {
      const companyId = await aStoredCompany(store)
      const quota = aQuota(companyId, { modified_at: minute(1) })
      const values = [
        aQuotaValue(companyId, quota.id, { modified_at: minute(2) }),
        aQuotaValue(companyId, quota.id, { modified_at: minute(3) }),
      ]
      await store.quotas.insert(quota)
      await store.quotaValues.insertMany(values)
      expect(await store.quotas.setType(companyId, quota.id, 'percentage', minute(10))).toBe(true)
      expect(await store.quotas.get(companyId, quota.id)).toStrictEqual({ ...quota, type: 'percentage', modified_at: minute(10) })
      expect(await store.quotaValues.page(companyId, quota.id, { limit: 10 })).toStrictEqual(byId(values))
    })

    it('answers false when setting the type of an unknown quota', async () => {
      const companyId = await aStoredCompany(store)
      expect(await store.quotas.setType(companyId, newId(), 'float', minute(1))).toBe(false)
    })
  })
}
