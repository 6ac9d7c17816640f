import { describe, expect, it } from 'vitest'
import type { Store } from '../../../src/store/port.ts'
import { aCompany } from '../builders.ts'
import { storePerTest, type StoreAdapter } from './support.ts'

export function lifecycleContract(adapter: StoreAdapter): void {
  describe('lifecycle', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

    it('answers ping while open', async () => {
      await expect(store.ping()).resolves.toBeUndefined()
    })

    it('moves its data version at every commit, its own or another connection’s, and only then (or has none: null)', async () => {
      const twin = await adapter.openTwin(store)
      try {
        const first = await store.dataVersion()
        const unchanged = await store.dataVersion()
        await store.companies.insert(aCompany())
        const afterOwn = await store.dataVersion()
        // Inside a transaction there is no committed version to label a read with.
        const inside = await twin.transaction(async (tx) => {
          await tx.companies.insert(aCompany())
          return tx.dataVersion()
        })
        const afterTwin = await store.dataVersion()
        expect(unchanged).toBe(first)
        expect(inside).toBeNull()
        // Three versions (the first, after each commit), or none at all.
        const versions = [first, afterOwn, afterTwin]
        expect(versions.every((version) => typeof version === 'string') || versions.every((version) => version === null)).toBe(true)
        expect(new Set(versions).size).toBe(first === null ? 1 : 3)
      } finally {
        if (twin !== store) await twin.close()
      }
    })

    it('closes idempotently, and ping fails once closed', async () => {
      await store.close()
      await store.close()
      await expect(store.ping()).rejects.toBeInstanceOf(Error)
    })
  })
}
