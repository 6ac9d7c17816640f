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

    it('deletes one key of its company, which is then found by no read, and moves committedWrites', async () => {
      const [a, b] = [await aStoredCompany(store), await aStoredCompany(store)]
      const [revoked, kept] = [anApiKey(a, newId()), anApiKey(a, newId())]
      const theirs = anApiKey(b, newId())
      for (const key of [revoked, kept, theirs]) await store.apiKeys.insert(key)
      const writes = store.committedWrites()
      expect(await store.apiKeys.delete(a, revoked.id)).toBe(true)
      // What a cached authentication of this store relies on to drop the key at once (src/auth/principal-cache.ts).
      expect(store.committedWrites()).not.toBe(writes)
      expect(await store.apiKeys.findByHash(revoked.hash)).toBeNull()
      expect(await store.apiKeys.list(a)).toStrictEqual([kept])
      expect(await store.apiKeys.delete(a, revoked.id)).toBe(false)
      expect(await store.apiKeys.findByHash(kept.hash)).toStrictEqual(kept)
      expect(await store.apiKeys.findByHash(theirs.hash)).toStrictEqual(theirs)
    })

    it("never deletes another company's key, given its id: false, and the key stays", async () => {
      const [a, b] = [await aStoredCompany(store), await aStoredCompany(store)]
      const theirs = anApiKey(b, newId())
      await store.apiKeys.insert(theirs)
      expect(await store.apiKeys.delete(a, theirs.id)).toBe(false)
      expect(await store.apiKeys.delete(a, newId())).toBe(false)
      expect(await store.apiKeys.findByHash(theirs.hash)).toStrictEqual(theirs)
      expect(await store.apiKeys.list(b)).toStrictEqual([theirs])
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
