import { beforeEach, describe, expect, it } from 'vitest'
import { newId } from '../../../src/ids.ts'
import type { Store } from '../../../src/store/port.ts'
import { aCommissionLine, aCompany, aDataTable, aMetric, aQuota, aQuotaValue, aStatement, aStructure, minute } from '../builders.ts'
import { storePerTest, type StoreAdapter } from './support.ts'

/** `store.adminEdits`: edits of stored records, for every adapter. */
export function adminEditsContract(adapter: StoreAdapter): void {
  describe('admin edits', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))
    let companyId: string
    let strangerId: string

    beforeEach(async () => {
      companyId = newId()
      strangerId = newId()
      await store.companies.insert(aCompany({ id: companyId }))
      await store.companies.insert(aCompany({ id: strangerId }))
    })

    it('changes the given fields of a statement and its modification time, which the pages then filter on', async () => {
      const statement = aStatement(companyId, { modified_at: minute(1) })
      const other = aStatement(companyId, { modified_at: minute(1) })
      await store.statements.insertMany([statement, other])
      const changed = await store.adminEdits.updateStatement(companyId, statement.id, {
        modified_at: minute(5),
        payment: null,
        status: 'paid',
      })
      const expected = { ...statement, modified_at: minute(5), payment: null, status: 'paid' }
      expect(changed).toStrictEqual(expected)
      expect(await store.statements.page(companyId, 'live', { limit: 10 })).toStrictEqual(
        [expected, other].toSorted((a, b) => (a.id < b.id ? -1 : 1)),
      )
      expect(
        await store.statements.page(companyId, 'live', { limit: 10, modifiedAfter: { at: minute(4), inclusive: false } }),
      ).toStrictEqual([expected])
    })

    it('finds a sandbox statement too, and leaves fields it is not given (undefined) as they were', async () => {
      const statement = aStatement(companyId, { environment: 'sandbox' })
      await store.statements.insertMany([statement])
      const changed = await store.adminEdits.updateStatement(companyId, statement.id, { modified_at: minute(2), payment: undefined })
      expect(changed).toStrictEqual({ ...statement, modified_at: minute(2) })
    })

    it('changes a commission line and a quota value, with their modification times', async () => {
      const table = aDataTable(companyId)
      await store.dataTables.insert(table)
      const line = aCommissionLine(companyId, table.id)
      await store.commissionLines.insertMany([line])
      expect(await store.adminEdits.updateCommissionLine(companyId, line.id, { modified_at: minute(3), commission: 5 })).toStrictEqual({
        ...line,
        modified_at: minute(3),
        commission: 5,
      })
      expect(
        await store.commissionLines.page(companyId, table.id, { limit: 10, modifiedAfter: { at: minute(3), inclusive: true } }),
      ).toHaveLength(1)

      const quota = aQuota(companyId)
      await store.quotas.insert(quota)
      const value = aQuotaValue(companyId, quota.id)
      await store.quotaValues.insertMany([value])
      const changes = { modified_at: minute(4), value: 1, source: 'integration' as const }
      expect(await store.adminEdits.updateQuotaValue(companyId, value.id, changes)).toStrictEqual({ ...value, ...changes })
      expect(
        await store.quotaValues.page(companyId, quota.id, { limit: 10, modifiedBefore: { at: minute(4), inclusive: false } }),
      ).toStrictEqual([])
    })

    it('changes a reporting structure and a custom metric', async () => {
      const structure = aStructure(companyId)
      await store.structures.insert(structure)
      const structureChanges = { modified_at: minute(6), name: 'Renamed', metric_keys: ['metric_b'], field_keys: [] }
      expect(await store.adminEdits.updateStructure(companyId, structure.id, structureChanges)).toStrictEqual({
        ...structure,
        ...structureChanges,
      })
      expect(await store.structures.get(companyId, structure.id)).toStrictEqual({ ...structure, ...structureChanges })

      const metric = aMetric(companyId)
      await store.metrics.insert(metric)
      const metricChanges = { modified_at: minute(7), kind: 'enum' as const, currencies: null, enum_values: ['a', 'b'] }
      expect(await store.adminEdits.updateMetric(companyId, metric.id, metricChanges)).toStrictEqual({ ...metric, ...metricChanges })
      expect(await store.metrics.list(companyId)).toStrictEqual([{ ...metric, ...metricChanges }])
    })

    it('gives the same record when the same changes are applied twice', async () => {
      const statement = aStatement(companyId)
      await store.statements.insertMany([statement])
      const changes = { modified_at: minute(8), payment: 12 }
      const once = await store.adminEdits.updateStatement(companyId, statement.id, changes)
      expect(await store.adminEdits.updateStatement(companyId, statement.id, changes)).toStrictEqual(once)
    })

    it('answers null for an unknown id and for another company’s record, which stays as it was', async () => {
      const theirs = aStatement(strangerId)
      await store.statements.insertMany([theirs])
      const structure = aStructure(strangerId)
      await store.structures.insert(structure)
      const change = { modified_at: minute(9) }
      expect(await store.adminEdits.updateStatement(companyId, theirs.id, change)).toBeNull()
      expect(await store.adminEdits.updateStatement(companyId, newId(), change)).toBeNull()
      expect(await store.adminEdits.updateCommissionLine(companyId, newId(), change)).toBeNull()
      expect(await store.adminEdits.updateQuotaValue(companyId, newId(), change)).toBeNull()
      expect(await store.adminEdits.updateStructure(companyId, structure.id, change)).toBeNull()
      expect(await store.adminEdits.updateMetric(companyId, newId(), change)).toBeNull()
      expect(await store.statements.page(strangerId, 'live', { limit: 10 })).toStrictEqual([theirs])
      expect(await store.structures.get(strangerId, structure.id)).toStrictEqual(structure)
    })
  })
}
