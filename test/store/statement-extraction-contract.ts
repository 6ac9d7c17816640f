import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { newId } from '../../src/ids.ts'
import type { Environment, Statement } from '../../src/store/model.ts'
import type { ExtractedStatement, RowWindow, Store } from '../../src/store/port.ts'
import { aCompany, aStatement, byId, minute } from './builders.ts'
import type { StoreFactory } from './contract.ts'

/**
 * `statements.pageForExtraction`, for every adapter: the statements `page` selects, with only the fields a v2
 * statement row shows. `page` itself is in the main contract; here each window is checked against it, and
 * against the rows it must select.
 */

/** What the extraction must return for a stored statement: these seven fields, and no other. */
function extracted({ id, user_id, date, status, currency, payment, metrics }: Statement): ExtractedStatement {
  return { id, user_id, date, status, currency, payment, metrics }
}

export function statementExtractionContract(name: string, factory: StoreFactory): void {
  describe(`store contract, statements.pageForExtraction: ${name}`, () => {
    let store: Store
    let companyId: string

    beforeEach(async () => {
      store = await factory.create()
      const company = aCompany()
      await store.companies.insert(company)
      companyId = company.id
    })

    afterEach(async () => {
      await store.close()
      await factory.cleanup?.(store)
    })

    const extract = (window: RowWindow, environment: Environment = 'live') => store.statements.pageForExtraction(companyId, environment, window)

    it('returns the fields a v2 row shows exactly as written, and no other', async () => {
      const statements = byId([
        aStatement(companyId, { payment: 0.1 + 0.2, metrics: { empty: [], nothing: null, deep: { a: [{ b: 'ü "q" \\ \n' }] }, big: Number.MAX_SAFE_INTEGER } }),
        aStatement(companyId, { payment: null, metrics: {}, dimensions: {}, status: 'paid', currency: 'USD' }),
        aStatement(companyId, { payment: -0.5, metrics: { tiny: 1e-9, text: '日本' }, status: 'pending', date: '2025-12-31' }),
      ])
      await store.statements.insertMany(statements.toReversed())

      const found = await extract({ limit: 10 })

      expect(found).toStrictEqual(statements.map(extracted))
      for (const statement of found) expect(Object.keys(statement).toSorted()).toStrictEqual(['currency', 'date', 'id', 'metrics', 'payment', 'status', 'user_id'])
    })

    describe('over a scope with rows around it', () => {
      /** Six live rows in id order, whose times are not in id order and where two times are equal. */
      let rows: Statement[]

      beforeEach(async () => {
        rows = byId([3, 1, 5, 2, 4, 3].map((at) => aStatement(companyId, { modified_at: minute(at) })))
        await store.statements.insertMany(rows.toReversed())
        await store.statements.insertMany([aStatement(companyId, { environment: 'sandbox', modified_at: minute(3) })])
        const stranger = aCompany()
        await store.companies.insert(stranger)
        await store.statements.insertMany([aStatement(stranger.id, { modified_at: minute(3) })])
      })

      it('selects the rows of the window, as `page` does', async () => {
        const at = minute(3)
        const windows: Array<[RowWindow, Statement[]]> = [
          [{ limit: 100 }, rows],
          [{ limit: 2 }, rows.slice(0, 2)],
          [{ limit: 0 }, []],
          [{ afterId: rows[1].id, limit: 2 }, rows.slice(2, 4)],
          [{ afterId: rows[5].id, limit: 100 }, []],
          [{ afterId: '0'.repeat(24), limit: 100 }, rows],
          [{ afterId: newId(), limit: 100 }, []],
          [{ limit: 100, modifiedAfter: { at, inclusive: true } }, rows.filter((row) => row.modified_at >= at)],
          [{ limit: 100, modifiedAfter: { at, inclusive: false } }, rows.filter((row) => row.modified_at > at)],
          [{ limit: 100, modifiedBefore: { at, inclusive: true } }, rows.filter((row) => row.modified_at <= at)],
          [{ limit: 100, modifiedBefore: { at, inclusive: false } }, rows.filter((row) => row.modified_at < at)],
          [
            { afterId: rows[0].id, limit: 2, modifiedAfter: { at: minute(2), inclusive: true }, modifiedBefore: { at: minute(5), inclusive: false } },
            rows.slice(1).filter((row) => row.modified_at >= minute(2) && row.modified_at < minute(5)).slice(0, 2),
          ],
        ]
        for (const [window, expected] of windows) {
          const found = await extract(window)
          expect(found, JSON.stringify(window)).toStrictEqual(expected.map(extracted))
          expect(found, JSON.stringify(window)).toStrictEqual((await store.statements.page(companyId, 'live', window)).map(extracted))
        }
      })

      it('reads only the environment and the company it is given', async () => {
        const [sandbox] = await store.statements.page(companyId, 'sandbox', { limit: 10 })
        expect(await extract({ limit: 10 }, 'sandbox')).toStrictEqual([extracted(sandbox)])
        expect(await store.statements.pageForExtraction(aCompany().id, 'live', { limit: 10 })).toStrictEqual([])
      })
    })

    it('returns fresh objects: changing one never changes the store', async () => {
      const statement = aStatement(companyId, { metrics: { bonus: { value: 5, currency: 'EUR' }, tier: 'gold' } })
      await store.statements.insertMany([statement])
      const [first] = await extract({ limit: 1 })
      first.currency = 'changed'
      ;(first.metrics.bonus as { value: number }).value = 99
      first.metrics.added = true
      expect(await extract({ limit: 1 })).toStrictEqual([extracted(statement)])
    })

    it('sees the writes of the transaction it runs in', async () => {
      const statement = aStatement(companyId)
      const inside = await store.transaction(async (tx) => {
        await tx.statements.insertMany([statement])
        return tx.statements.pageForExtraction(companyId, 'live', { limit: 10 })
      })
      expect(inside).toStrictEqual([extracted(statement)])
    })
  })
}
