import { describe, expect, it } from 'vitest'
import type { Store } from '../../../src/store/port.ts'
import { aMetric } from '../builders.ts'
import { storePerTest, type StoreAdapter } from './support.ts'
import { aStoredCompany } from './world.ts'

export function metricsContract(adapter: StoreAdapter): void {
  describe('metrics', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

    it('lists custom metrics in creation order', async () => {
      const companyId = await aStoredCompany(store)
      const metrics = [
        aMetric(companyId),
        aMetric(companyId, { kind: 'enum', currencies: null, enum_values: ['low', 'high'] }),
        aMetric(companyId, { kind: 'percentage', currencies: null }),
      ]
      for (const metric of metrics) await store.metrics.insert(metric)
      expect(await store.metrics.list(companyId)).toStrictEqual(metrics)
    })
  })
}
