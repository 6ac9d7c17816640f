import { describe, expect, it } from 'vitest'
import type { Store } from '../../../src/store/port.ts'
import { aUserAttribute } from '../builders.ts'
import { storePerTest, type StoreAdapter } from './support.ts'
import { aStoredCompany } from './world.ts'

export function userAttributesContract(adapter: StoreAdapter): void {
  describe('userAttributes', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

    it('lists attribute definitions in creation order', async () => {
      const companyId = await aStoredCompany(store)
      const definitions = [aUserAttribute(companyId), aUserAttribute(companyId, { type: 'amount' }), aUserAttribute(companyId)]
      for (const definition of definitions) await store.userAttributes.insert(definition)
      expect(await store.userAttributes.list(companyId)).toStrictEqual(definitions)
    })
  })
}
