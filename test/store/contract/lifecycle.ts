import { describe, expect, it } from 'vitest'
import type { Store } from '../../../src/store/port.ts'
import { storePerTest, type StoreAdapter } from './support.ts'

export function lifecycleContract(adapter: StoreAdapter): void {
  describe('lifecycle', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

    it('answers ping while open', async () => {
      await expect(store.ping()).resolves.toBeUndefined()
    })

    it('closes idempotently, and ping fails once closed', async () => {
      await store.close()
      await store.close()
      await expect(store.ping()).rejects.toBeInstanceOf(Error)
    })
  })
}
