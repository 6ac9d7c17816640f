import { beforeEach, describe, expect, it } from 'vitest'
import { newId } from '../../../src/ids.ts'
import type { CommissionLine, Environment, QuotaValue, Statement } from '../../../src/store/model.ts'
import type { RowWindow, Store } from '../../../src/store/port.ts'
import { aCommissionLine, aDataTable, aQuota, aQuotaValue, aStatement, byId, minute } from '../builders.ts'
import { storePerTest, type StoreAdapter } from './support.ts'
import { aStoredCompany } from './world.ts'

/** A kind of id-ordered row sequence that `page` reads: statements (by environment), commission lines (by table), quota values (by quota). */
interface SequenceKind<T extends { id: string; modified_at: string }> {
  name: string
  /** Creates two sequences of the company (environments, data tables, quotas): the rows' and another; answers their ids. */
  sequences(store: Store, companyId: string): Promise<[string, string]>
  make(companyId: string, sequenceId: string, modifiedAt: string): T
  insert(store: Store, rows: T[]): Promise<void>
  page(store: Store, companyId: string, sequenceId: string, window: RowWindow): Promise<T[]>
  count(store: Store, companyId: string, sequenceId: string): Promise<number>
}

const STATEMENTS: SequenceKind<Statement> = {
  name: 'statements',
  sequences: async () => ['live', 'sandbox'],
  make: (companyId, sequenceId, modifiedAt) => aStatement(companyId, { environment: sequenceId as Environment, modified_at: modifiedAt }),
  insert: (store, rows) => store.statements.insertMany(rows),
  page: (store, companyId, sequenceId, window) => store.statements.page(companyId, sequenceId as Environment, window),
  count: (store, companyId, sequenceId) => store.statements.count(companyId, sequenceId as Environment),
}

const COMMISSION_LINES: SequenceKind<CommissionLine> = {
  name: 'commissionLines',
  async sequences(store, companyId) {
    const tables = [aDataTable(companyId), aDataTable(companyId)]
    for (const table of tables) await store.dataTables.insert(table)
    return [tables[0].id, tables[1].id]
  },
  make: (companyId, sequenceId, modifiedAt) => aCommissionLine(companyId, sequenceId, { modified_at: modifiedAt }),
  insert: (store, rows) => store.commissionLines.insertMany(rows),
  page: (store, companyId, sequenceId, window) => store.commissionLines.page(companyId, sequenceId, window),
  count: (store, companyId, sequenceId) => store.commissionLines.count(companyId, sequenceId),
}

const QUOTA_VALUES: SequenceKind<QuotaValue> = {
  name: 'quotaValues',
  async sequences(store, companyId) {
    const quotas = [aQuota(companyId), aQuota(companyId)]
    for (const quota of quotas) await store.quotas.insert(quota)
    return [quotas[0].id, quotas[1].id]
  },
  make: (companyId, sequenceId, modifiedAt) => aQuotaValue(companyId, sequenceId, { modified_at: modifiedAt }),
  insert: (store, rows) => store.quotaValues.insertMany(rows),
  page: (store, companyId, sequenceId, window) => store.quotaValues.page(companyId, sequenceId, window),
  count: (store, companyId, sequenceId) => store.quotaValues.count(companyId, sequenceId),
}

export function pagesContract(adapter: StoreAdapter): void {
  describe('pages', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

    for (const kind of [STATEMENTS, COMMISSION_LINES, QUOTA_VALUES] as Array<SequenceKind<{ id: string; modified_at: string }>>) {
      describe(`${kind.name}.page`, () => {
        let companyId: string
        let sequenceId: string
        /** Six rows in id order, whose times are not in id order and where two times are equal. */
        let rows: Array<{ id: string; modified_at: string }>

        beforeEach(async () => {
          companyId = await aStoredCompany(store)
          const [mine, other] = await kind.sequences(store, companyId)
          sequenceId = mine
          rows = byId([3, 1, 5, 2, 4, 3].map((at) => kind.make(companyId, sequenceId, minute(at))))
          await kind.insert(store, rows.toReversed())
          await kind.insert(store, [kind.make(companyId, other, minute(3))])
          // Another company's rows under the same sequence id: statements share environments.
          const stranger = await aStoredCompany(store)
          await kind.insert(store, [kind.make(stranger, sequenceId, minute(3))])
        })

        const page = (window: RowWindow) => kind.page(store, companyId, sequenceId, window)
        const modified = (predicate: (at: string) => boolean) => rows.filter((row) => predicate(row.modified_at))

        it('returns the rows of the sequence in id order, at most `limit`', async () => {
          expect(await page({ limit: 100 })).toStrictEqual(rows)
          expect(await page({ limit: 2 })).toStrictEqual(rows.slice(0, 2))
          expect(await page({ limit: 6 })).toStrictEqual(rows)
          expect(await page({ limit: 0 })).toStrictEqual([])
        })

        it('counts the rows of the sequence', async () => {
          expect(await kind.count(store, companyId, sequenceId)).toBe(6)
        })

        it('starts after `afterId`, which need not be the id of a row', async () => {
          expect(await page({ afterId: rows[1].id, limit: 100 })).toStrictEqual(rows.slice(2))
          expect(await page({ afterId: rows[1].id, limit: 2 })).toStrictEqual(rows.slice(2, 4))
          expect(await page({ afterId: rows[5].id, limit: 100 })).toStrictEqual([])
          expect(await page({ afterId: '0'.repeat(24), limit: 100 })).toStrictEqual(rows)
          expect(await page({ afterId: newId(), limit: 100 })).toStrictEqual([])
        })

        it('walks the whole sequence page by page', async () => {
          const seen: Array<{ id: string; modified_at: string }> = []
          let afterId: string | undefined
          for (let pages = 0; pages < 10; pages++) {
            const window: RowWindow = afterId === undefined ? { limit: 4 } : { afterId, limit: 4 }
            const found = await page(window)
            seen.push(...found)
            if (found.length < 4) break
            afterId = found[found.length - 1].id
          }
          expect(seen).toStrictEqual(rows)
        })

        it('bounds the modification time from below, inclusively or not', async () => {
          const at = minute(3)
          expect(await page({ limit: 100, modifiedAfter: { at, inclusive: true } })).toStrictEqual(modified((time) => time >= at))
          expect(await page({ limit: 100, modifiedAfter: { at, inclusive: false } })).toStrictEqual(modified((time) => time > at))
          expect(await page({ limit: 100, modifiedAfter: { at: minute(5), inclusive: false } })).toStrictEqual([])
        })

        it('bounds the modification time from above, inclusively or not', async () => {
          const at = minute(3)
          expect(await page({ limit: 100, modifiedBefore: { at, inclusive: true } })).toStrictEqual(modified((time) => time <= at))
          expect(await page({ limit: 100, modifiedBefore: { at, inclusive: false } })).toStrictEqual(modified((time) => time < at))
          expect(await page({ limit: 100, modifiedBefore: { at: minute(1), inclusive: false } })).toStrictEqual([])
        })

        it('compares times to the millisecond', async () => {
          const justAfter = new Date(Date.parse(minute(3)) + 1).toISOString()
          const justBefore = new Date(Date.parse(minute(3)) - 1).toISOString()
          expect(await page({ limit: 100, modifiedAfter: { at: justBefore, inclusive: false } })).toStrictEqual(
            modified((time) => time >= minute(3)),
          )
          expect(await page({ limit: 100, modifiedBefore: { at: justAfter, inclusive: false } })).toStrictEqual(
            modified((time) => time <= minute(3)),
          )
        })

        it('combines both time bounds', async () => {
          const window: RowWindow = {
            limit: 100,
            modifiedAfter: { at: minute(1), inclusive: false },
            modifiedBefore: { at: minute(4), inclusive: true },
          }
          expect(await page(window)).toStrictEqual(modified((time) => time > minute(1) && time <= minute(4)))
          const instant = { at: minute(3), inclusive: true }
          expect(await page({ limit: 100, modifiedAfter: instant, modifiedBefore: instant })).toStrictEqual(
            modified((time) => time === minute(3)),
          )
          const empty = {
            limit: 100,
            modifiedAfter: { at: minute(3), inclusive: false },
            modifiedBefore: { at: minute(3), inclusive: true },
          }
          expect(await page(empty)).toStrictEqual([])
        })

        it('combines afterId, time bounds and limit', async () => {
          const window: RowWindow = {
            afterId: rows[0].id,
            limit: 2,
            modifiedAfter: { at: minute(2), inclusive: true },
            modifiedBefore: { at: minute(5), inclusive: false },
          }
          const matching = rows.slice(1).filter((row) => row.modified_at >= minute(2) && row.modified_at < minute(5))
          expect(matching.length).toBeGreaterThan(2)
          expect(await page(window)).toStrictEqual(matching.slice(0, 2))
          const last = matching[1].id
          expect(await page({ ...window, afterId: last })).toStrictEqual(matching.slice(2, 4))
        })
      })
    }
  })
}
