import { describe, expect, it } from 'vitest'
import type { Store } from '../../../src/store/port.ts'
import { aDataTable, aRecord, byId, minute } from '../builders.ts'
import { storePerTest, ALL, type StoreAdapter } from './support.ts'
import { aStoredCompany } from './world.ts'

export function recordsContract(adapter: StoreAdapter): void {
  describe('records', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

    it('lists the records of one table in id order with offset windows, and counts them', async () => {
      const companyId = await aStoredCompany(store)
      const [table, other] = [aDataTable(companyId), aDataTable(companyId)]
      const records = Array.from({ length: 5 }, () => aRecord(companyId, table.id))
      await store.records.upsert(companyId, records.toReversed())
      await store.records.upsert(companyId, [aRecord(companyId, other.id)])
      const sorted = byId(records)
      expect(await store.records.list(companyId, table.id, ALL)).toStrictEqual(sorted)
      expect(await store.records.list(companyId, table.id, { offset: 1, limit: 3 })).toStrictEqual(sorted.slice(1, 4))
      expect(await store.records.list(companyId, table.id, { offset: 5, limit: 3 })).toStrictEqual([])
      // With the id of the row before the window, the rows after it, whatever the offset.
      expect(await store.records.list(companyId, table.id, { offset: 0, limit: 2, afterId: sorted[1].id })).toStrictEqual(
        sorted.slice(2, 4),
      )
      expect(await store.records.list(companyId, table.id, { offset: 99, limit: 9, afterId: sorted[3].id })).toStrictEqual(sorted.slice(4))
      expect(await store.records.count(companyId, table.id)).toBe(5)
      // The greatest id of the table's records; none for a table without any.
      expect(await store.records.lastId(companyId, table.id)).toBe(sorted[4].id)
      expect(await store.records.lastId(companyId, aDataTable(companyId).id)).toBeNull()
      expect(await store.records.count(companyId, other.id)).toBe(1)
    })

    it('replaces a record with the same external id, keeping its id and created_at', async () => {
      const companyId = await aStoredCompany(store)
      const table = aDataTable(companyId)
      const original = aRecord(companyId, table.id, { external_id: 'deal-7', created_at: minute(1), modified_at: minute(1) })
      const untouched = aRecord(companyId, table.id)
      await store.records.upsert(companyId, [original, untouched])
      const replacement = aRecord(companyId, table.id, {
        external_id: 'deal-7',
        values: { deal_id: 'deal-7', deal_name: 'Renamed' },
        overrides: { deal_name: 'By hand' },
        created_at: minute(9),
        modified_at: minute(9),
      })
      await store.records.upsert(companyId, [replacement])
      const expected = { ...replacement, id: original.id, created_at: original.created_at }
      expect(await store.records.list(companyId, table.id, ALL)).toStrictEqual(byId([expected, untouched]))
      expect(await store.records.count(companyId, table.id)).toBe(2)
    })

    it('applies a batch in order: a later record with the same external id replaces an earlier one', async () => {
      const companyId = await aStoredCompany(store)
      const table = aDataTable(companyId)
      const first = aRecord(companyId, table.id, { external_id: 'deal-1' })
      const second = aRecord(companyId, table.id, { external_id: 'deal-1', values: { deal_id: 'deal-1', v: 2 } })
      await store.records.upsert(companyId, [first, second])
      expect(await store.records.list(companyId, table.id, ALL)).toStrictEqual([{ ...second, id: first.id, created_at: first.created_at }])
    })

    it('keeps records of two tables apart even when their external ids match', async () => {
      const companyId = await aStoredCompany(store)
      const [one, two] = [aDataTable(companyId), aDataTable(companyId)]
      const inOne = aRecord(companyId, one.id, { external_id: 'x' })
      const inTwo = aRecord(companyId, two.id, { external_id: 'x' })
      await store.records.upsert(companyId, [inOne, inTwo])
      expect(await store.records.list(companyId, one.id, ALL)).toStrictEqual([inOne])
      expect(await store.records.list(companyId, two.id, ALL)).toStrictEqual([inTwo])
    })
  })
}
