import { describe, expect, it } from 'vitest'
import { newId } from '../../../src/ids.ts'
import type { Store } from '../../../src/store/port.ts'
import { aStructure, byId } from '../builders.ts'
import { storePerTest, type StoreAdapter } from './support.ts'
import { aStoredCompany } from './world.ts'

export function structuresContract(adapter: StoreAdapter): void {
  describe('structures', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

    it('gets a structure by id and lists them in id order', async () => {
      const companyId = await aStoredCompany(store)
      const structures = [
        aStructure(companyId),
        aStructure(companyId, { type: 'record_reporting', data_table_id: newId(), field_keys: ['a', 'b'] }),
        aStructure(companyId, { environment: 'sandbox', metric_keys: [] }),
      ]
      for (const structure of structures.toReversed()) await store.structures.insert(structure)
      expect(await store.structures.get(companyId, structures[1].id)).toStrictEqual(structures[1])
      expect(await store.structures.list(companyId)).toStrictEqual(byId(structures))
    })
  })
}
