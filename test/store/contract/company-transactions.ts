import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { newId } from '../../../src/ids.ts'
import type { Store } from '../../../src/store/port.ts'
import { aCompany, aQuota, aQuotaValue } from '../builders.ts'
import { storePerTest, gate, type StoreAdapter } from './support.ts'

/**
 * Transactions that name a company (`Store.transaction`), on two stores over the same data, as two instances
 * of the service open them: they never overlap, so none commits on a reading the other changed.
 */
export function companyTransactionsContract(adapter: StoreAdapter): void {
  describe('transactions naming a company across instances', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))
    let twin: Store

    beforeEach(async () => {
      twin = await adapter.openTwin(store)
    })
    afterEach(async () => {
      if (twin !== store) await twin.close()
    })

    it('runs the later of two overlapping ones after the earlier one, on what it wrote', async () => {
      const company = aCompany()
      await store.companies.insert(company)
      const quota = aQuota(company.id)
      await store.quotas.insert(quota)
      // Each reads how many values the quota holds, then writes a value (of its own user) numbered with it:
      // two that overlapped would both read 0 and write two different documents, which nothing else refuses.
      const numbered = async (tx: Store, count: number) =>
        tx.quotaValues.insertMany([aQuotaValue(company.id, quota.id, { user_id: newId(), period: String(2000 + count) })])
      const firstRead = gate()
      const release = gate()
      const secondRead = gate()
      const first = store.transaction(
        async (tx) => {
          const count = await tx.quotaValues.count(company.id, quota.id)
          firstRead.open()
          await release.promise
          await numbered(tx, count)
        },
        { company: company.id },
      )
      await firstRead.promise
      const second = twin.transaction(
        async (tx) => {
          const count = await tx.quotaValues.count(company.id, quota.id)
          secondRead.open()
          await numbered(tx, count)
        },
        { company: company.id },
      )
      // The second may not read while the first is open; give it the chance to, then let the first go on.
      await Promise.race([secondRead.promise, sleep(300)])
      release.open()
      await Promise.all([first, second])
      const values = await store.quotaValues.page(company.id, quota.id, { limit: 10 })
      expect(values.map((value) => value.period).toSorted()).toStrictEqual(['2000', '2001'])
    })
  })
}
