import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { Environment } from '../../src/store/model.ts'
import type { OffsetWindow, Store } from '../../src/store/port.ts'
import { aCommissionLine, aCompany, aDataTable, aStatement, byId } from './builders.ts'
import type { StoreFactory } from './contract.ts'

/** One of the sequences the v1 reporting reads list by offset: statements by environment, lines by data table. */
interface OffsetSequence {
  name: string
  /** Two scopes of the company: the rows' and another one. */
  scopes(store: Store, companyId: string): Promise<[string, string]>
  make(companyId: string, scope: string): { id: string }
  insert(store: Store, rows: Array<{ id: string }>): Promise<void>
  list(store: Store, companyId: string, scope: string, window: OffsetWindow): Promise<Array<{ id: string }>>
}

const SEQUENCES: OffsetSequence[] = [
  {
    name: 'statements.list',
    scopes: async () => ['live', 'sandbox'],
    make: (companyId, scope) => aStatement(companyId, { environment: scope as Environment }),
    insert: (store, rows) => store.statements.insertMany(rows as ReturnType<typeof aStatement>[]),
    list: (store, companyId, scope, window) => store.statements.list(companyId, scope as Environment, window),
  },
  {
    name: 'commissionLines.list',
    async scopes(store, companyId) {
      const tables = [aDataTable(companyId), aDataTable(companyId)]
      for (const table of tables) await store.dataTables.insert(table)
      return [tables[0].id, tables[1].id]
    },
    make: (companyId, scope) => aCommissionLine(companyId, scope),
    insert: (store, rows) => store.commissionLines.insertMany(rows as ReturnType<typeof aCommissionLine>[]),
    list: (store, companyId, scope, window) => store.commissionLines.list(companyId, scope, window),
  },
]

/** The offset windows of the statement and commission-line repositories, for every adapter. */
export function offsetListsContract(name: string, factory: StoreFactory): void {
  describe(`store contract, offset lists: ${name}`, () => {
    let store: Store

    beforeEach(async () => {
      store = await factory.create()
    })

    afterEach(async () => {
      await store.close()
      await factory.cleanup?.(store)
    })

    for (const sequence of SEQUENCES) {
      describe(`${sequence.name}`, () => {
        let companyId: string
        let scope: string
        let rows: Array<{ id: string }>

        beforeEach(async () => {
          const company = aCompany()
          await store.companies.insert(company)
          companyId = company.id
          const [mine, other] = await sequence.scopes(store, companyId)
          scope = mine
          rows = byId([1, 2, 3, 4, 5].map(() => sequence.make(companyId, scope)))
          // Inserted out of order, beside rows of another scope and of another company under the same scope.
          await sequence.insert(store, rows.toReversed())
          await sequence.insert(store, [sequence.make(companyId, other)])
          const stranger = aCompany()
          await store.companies.insert(stranger)
          await sequence.insert(store, [sequence.make(stranger.id, scope)])
        })

        const list = (window: OffsetWindow) => sequence.list(store, companyId, scope, window)

        it('returns the rows of the scope in id order, skipping `offset`, at most `limit`', async () => {
          expect(await list({ offset: 0, limit: 100 })).toStrictEqual(rows)
          expect(await list({ offset: 0, limit: 2 })).toStrictEqual(rows.slice(0, 2))
          expect(await list({ offset: 2, limit: 2 })).toStrictEqual(rows.slice(2, 4))
          expect(await list({ offset: 4, limit: 2 })).toStrictEqual(rows.slice(4))
        })

        it('answers an empty list past the end and for a zero limit', async () => {
          expect(await list({ offset: 5, limit: 10 })).toStrictEqual([])
          expect(await list({ offset: 1000, limit: 10 })).toStrictEqual([])
          expect(await list({ offset: 0, limit: 0 })).toStrictEqual([])
        })

        it('walks every row exactly once, window after window', async () => {
          const seen: Array<{ id: string }> = []
          for (let offset = 0; offset < 10; offset += 2) seen.push(...(await list({ offset, limit: 2 })))
          expect(seen).toStrictEqual(rows)
        })

        it('returns fresh copies', async () => {
          const [first] = await list({ offset: 0, limit: 1 })
          ;(first as Record<string, unknown>).plan = 'changed'
          expect(await list({ offset: 0, limit: 1 })).toStrictEqual([rows[0]])
        })
      })
    }
  })
}
