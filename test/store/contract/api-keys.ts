import { describe, expect, it } from 'vitest'
import { newId } from '../../../src/ids.ts'
import type { Store } from '../../../src/store/port.ts'
import { anApiKey, byId } from '../builders.ts'
import { storePerTest, expectConflict, type StoreAdapter } from './support.ts'
import { aStoredCompany } from './world.ts'

export function apiKeysContract(adapter: StoreAdapter): void {
  describe('apiKeys', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

    it('finds a key by its hash whatever its company, and lists keys by company in id order', async () => {
      const [a, b] = [await aStoredCompany(store), await aStoredCompany(store)]
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
      const [a, b] = [await aStoredCompany(store), await aStoredCompany(store)]
      const key = anApiKey(a, newId())
      await store.apiKeys.insert(key)
      await expectConflict(store.apiKeys.insert(anApiKey(b, newId(), { hash: key.hash })))
      expect(await store.apiKeys.list(b)).toStrictEqual([])
    })
  })
}
