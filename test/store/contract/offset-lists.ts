import { beforeEach, describe, expect, it } from 'vitest'
import type { Environment } from '../../../src/store/model.ts'
import type { OffsetWindow, Store } from '../../../src/store/port.ts'
import { aCommissionLine, aCompany, aDataTable, aStatement, byId } from '../builders.ts'
import { storePerTest, type StoreAdapter } from './support.ts'

/** A kind of sequence the v1 reporting reads lists by offset: statements (by environment), lines (by data table). */
interface OffsetSequenceKind {
  name: string
  /** Two sequences of the company (environments, data tables): the rows' and another one; their ids. */
  sequences(store: Store, companyId: string): Promise<[string, string]>
  make(companyId: string, sequenceId: string): { id: string }
  insert(store: Store, rows: Array<{ id: string }>): Promise<void>
  list(store: Store, companyId: string, sequenceId: string, window: OffsetWindow): Promise<Array<{ id: string }>>
}

const SEQUENCES: OffsetSequenceKind[] = [
  {
    name: 'statements.list',
    sequences: async () => ['live', 'sandbox'],
    make: (companyId, sequenceId) => aStatement(companyId, { environment: sequenceId as Environment }),
    insert: (store, rows) => store.statements.insertMany(rows as ReturnType<typeof aStatement>[]),
    list: (store, companyId, sequenceId, window) => store.statements.list(companyId, sequenceId as Environment, window),
  },
  {
    name: 'commissionLines.list',
    async sequences(store, companyId) {
      const tables = [aDataTable(companyId), aDataTable(companyId)]
      for (const table of tables) await store.dataTables.insert(table)
      return [tables[0].id, tables[1].id]
    },
    make: (companyId, sequenceId) => aCommissionLine(companyId, sequenceId),
    insert: (store, rows) => store.commissionLines.insertMany(rows as ReturnType<typeof aCommissionLine>[]),
    list: (store, companyId, sequenceId, window) => store.commissionLines.list(companyId, sequenceId, window),
  },
]

/** The offset windows of the statement and commission-line repositories, for every adapter. */
export function offsetListsContract(adapter: StoreAdapter): void {
  describe('offset lists', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

    for (const kind of SEQUENCES) {
      describe(`${kind.name}`, () => {
        let companyId: string
        let sequenceId: string
        let rows: Array<{ id: string }>

        beforeEach(async () => {
          const company = aCompany()
          await store.companies.insert(company)
          companyId = company.id
          const [mine, other] = await kind.sequences(store, companyId)
          sequenceId = mine
          rows = byId([1, 2, 3, 4, 5].map(() => kind.make(companyId, sequenceId)))
          // Inserted out of order, beside rows of another sequence and of another company under the same sequence id.
          await kind.insert(store, rows.toReversed())
          await kind.insert(store, [kind.make(companyId, other)])
          const stranger = aCompany()
          await store.companies.insert(stranger)
          await kind.insert(store, [kind.make(stranger.id, sequenceId)])
        })

        const list = (window: OffsetWindow) => kind.list(store, companyId, sequenceId, window)

        it('returns the rows of the sequence in id order, skipping `offset`, at most `limit`', async () => {
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

        it('with the id of the row before a window, returns the rows after it, whatever the offset', async () => {
          expect(await list({ offset: 2, limit: 2, afterId: rows[1].id })).toStrictEqual(rows.slice(2, 4))
          expect(await list({ offset: 0, limit: 10, afterId: rows[2].id })).toStrictEqual(rows.slice(3))
          expect(await list({ offset: 1000, limit: 2, afterId: rows[0].id })).toStrictEqual(rows.slice(1, 3))
          expect(await list({ offset: 0, limit: 2, afterId: rows[4].id })).toStrictEqual([])
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
