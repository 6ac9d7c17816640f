import { describe, expect, it } from 'vitest'
import type { Store } from '../../../src/store/port.ts'
import { aDataTable, byId } from '../builders.ts'
import { storePerTest, type StoreAdapter } from './support.ts'
import { aStoredCompany } from './world.ts'

export function dataTablesContract(adapter: StoreAdapter): void {
  describe('dataTables', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

    it('gets a table by id and by (environment, key), and lists tables in id order', async () => {
      const companyId = await aStoredCompany(store)
      const live = aDataTable(companyId, { key: 'deals' })
      const sandbox = aDataTable(companyId, { key: 'deals', environment: 'sandbox' })
      const other = aDataTable(companyId, { key: 'invoices' })
      for (const table of [other, sandbox, live]) await store.dataTables.insert(table)
      expect(await store.dataTables.get(companyId, sandbox.id)).toStrictEqual(sandbox)
      expect(await store.dataTables.getByKey(companyId, 'live', 'deals')).toStrictEqual(live)
      expect(await store.dataTables.getByKey(companyId, 'sandbox', 'deals')).toStrictEqual(sandbox)
      expect(await store.dataTables.getByKey(companyId, 'sandbox', 'invoices')).toBeNull()
      expect(await store.dataTables.list(companyId)).toStrictEqual(byId([live, sandbox, other]))
    })
  })
}
