import { describe, expect, it } from 'vitest'
import { type Store, StoreConflictError } from '../../../src/store/port.ts'
import { aRecord, byId, minute } from '../builders.ts'
import { storePerTest, type StoreAdapter } from './support.ts'
import { populateTwo, readAll, readsOf, nothingOf } from './world.ts'

export function tenantIsolationContract(adapter: StoreAdapter): void {
  describe('tenant isolation', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

    it("never reads another company's rows, even given that company's ids and names", async () => {
      const [a, b] = await populateTwo(store)
      expect(await readAll(store, a.company.id, a)).toStrictEqual(readsOf(a))
      expect(await readAll(store, b.company.id, b)).toStrictEqual(readsOf(b))
      const crossed = await readAll(store, a.company.id, b)
      // B's ids and names, asked in A: only A's own rows answer the company-wide lists and the shared names.
      expect(crossed).toStrictEqual({
        ...nothingOf(),
        users: byId(a.users),
        userCount: 2,
        usersByEmail: new Map([[a.users[0].email.toLowerCase(), a.users[0]]]),
        apiKeys: [a.apiKey],
        attributes: [a.attribute],
        managers: [a.manager],
        groups: [a.group],
        metrics: [a.metric],
        tables: [a.table],
        tableByKey: a.table,
        structures: [a.structure],
        liveStatements: [a.statements[0]],
        sandboxStatements: [a.statements[1]],
        statementCount: 1,
        quotas: [a.quota],
      })
    })

    it("never writes another company's rows, even given that company's ids", async () => {
      const [a, b] = await populateTwo(store)
      const companyId = a.company.id
      expect(await store.quotas.setType(companyId, b.quota.id, 'float', minute(30))).toBe(false)
      expect(await store.apiKeys.delete(companyId, b.apiKey.id)).toBe(false)
      await store.attributions.replaceManagers(companyId, [b.users[0].id], [])
      await store.attributions.replaceGroups(companyId, [b.users[0].id], [])
      await store.records.upsert(companyId, [aRecord(companyId, b.table.id, { external_id: b.record.external_id })])
      // Whether a user with B's id may be saved in A is the adapter's choice; B's user must not change.
      const saved = await store.users.save(companyId, [{ ...b.users[1], company_id: companyId, email: 'taken@example.com' }]).then(
        () => 'saved',
        (error: unknown) => error,
      )
      expect(saved === 'saved' || saved instanceof StoreConflictError).toBe(true)
      expect(await store.companies.get(b.company.id)).toStrictEqual(b.company)
      expect(await readAll(store, b.company.id, b)).toStrictEqual(readsOf(b))
    })
  })
}
