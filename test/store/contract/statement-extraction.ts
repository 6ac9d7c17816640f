import { beforeEach, describe, expect, it } from 'vitest'
import { newId } from '../../../src/ids.ts'
import type { Environment, Statement } from '../../../src/store/model.ts'
import type { StatementRowFields, RowWindow, StatementRowSource, Store } from '../../../src/store/port.ts'
import { aCompany, aStatement, aUser, byId, minute } from '../builders.ts'
import { storePerTest, type StoreAdapter } from './support.ts'

/**
 * The statements the v2 extraction reads, for every adapter. `pageForExtraction`: the statements `page` selects,
 * each as the rendering it holds for the key asked, or else with only the fields a v2 statement row shows. `page`
 * itself is in the main contract; here each window is checked against it, and against the rows it must select.
 * `pageToRender` and `saveRenderings`: what keeps renderings, and drops them when a statement is written again.
 */

/** The fields a rendering is made from: these seven, and no other. */
function fieldsOf({ id, user_id, date, status, currency, payment, metrics }: Statement): StatementRowFields {
  return { id, user_id, date, status, currency, payment, metrics }
}

/** What the extraction must return for a statement that holds no rendering for the key asked. */
function extracted(statement: Statement): StatementRowSource {
  return { ...fieldsOf(statement), rendering: null }
}

/** What the extraction must return for a statement whose rendering for the key asked is `text`. */
function rendered(statement: Statement, text: string): StatementRowSource {
  return { id: statement.id, rendering: text }
}

const KEY = 'key-of-this-test'

/** A rendering that names its statement and key, so a test sees which one it got. */
const text = (statement: Statement, key = KEY) => `,"rendering of":"${statement.id} for ${key}"}`

export function statementExtractionContract(adapter: StoreAdapter): void {
  describe('statements.pageForExtraction', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))
    let companyId: string

    beforeEach(async () => {
      const company = aCompany()
      await store.companies.insert(company)
      companyId = company.id
    })

    const extract = (window: RowWindow, environment: Environment = 'live', key = KEY) =>
      store.statements.pageForExtraction(companyId, environment, window, key)
    const render = (statements: Statement[], key = KEY, environment: Environment = 'live') =>
      store.statements.saveRenderings(
        companyId,
        environment,
        statements.map((statement) => ({ id: statement.id, key, text: text(statement, key) })),
      )

    it('returns the fields a v2 row shows exactly as written, and no other', async () => {
      const statements = byId([
        aStatement(companyId, {
          payment: 0.1 + 0.2,
          metrics: { empty: [], nothing: null, deep: { a: [{ b: 'ü "q" \\ \n' }] }, big: Number.MAX_SAFE_INTEGER },
        }),
        aStatement(companyId, { payment: null, metrics: {}, dimensions: {}, status: 'paid', currency: 'USD' }),
        aStatement(companyId, { payment: -0.5, metrics: { tiny: 1e-9, text: '日本' }, status: 'pending', date: '2025-12-31' }),
      ])
      await store.statements.insertMany(statements.toReversed())

      const found = await extract({ limit: 10 })

      expect(found).toStrictEqual(statements.map(extracted))
      for (const statement of found) {
        expect(Object.keys(statement).toSorted()).toStrictEqual([
          'currency',
          'date',
          'id',
          'metrics',
          'payment',
          'rendering',
          'status',
          'user_id',
        ])
      }
    })

    describe('over an environment with rows around it', () => {
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
            {
              afterId: rows[0].id,
              limit: 2,
              modifiedAfter: { at: minute(2), inclusive: true },
              modifiedBefore: { at: minute(5), inclusive: false },
            },
            rows
              .slice(1)
              .filter((row) => row.modified_at >= minute(2) && row.modified_at < minute(5))
              .slice(0, 2),
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
        expect(await store.statements.pageForExtraction(aCompany().id, 'live', { limit: 10 }, KEY)).toStrictEqual([])
      })
    })

    it('returns fresh objects: changing one never changes the store', async () => {
      const statement = aStatement(companyId, { metrics: { bonus: { value: 5, currency: 'EUR' }, tier: 'gold' } })
      await store.statements.insertMany([statement])
      const [first] = await extract({ limit: 1 })
      if (first.rendering !== null) throw new Error('expected the fields of a statement without rendering')
      first.currency = 'changed'
      ;(first.metrics.bonus as { value: number }).value = 99
      first.metrics.added = true
      expect(await extract({ limit: 1 })).toStrictEqual([extracted(statement)])
    })

    it('sees the writes of the transaction it runs in', async () => {
      const statement = aStatement(companyId)
      const inside = await store.transaction(async (tx) => {
        await tx.statements.insertMany([statement])
        return tx.statements.pageForExtraction(companyId, 'live', { limit: 10 }, KEY)
      })
      expect(inside).toStrictEqual([extracted(statement)])
    })

    describe('renderings', () => {
      /** Four live statements in id order. */
      let rows: Statement[]

      beforeEach(async () => {
        rows = byId([1, 2, 3, 4].map(() => aStatement(companyId, { metrics: { tier: 'gold', bonus: { value: 5, currency: 'EUR' } } })))
        await store.statements.insertMany(rows)
      })

      it('are returned for the key they were saved with, in place of the fields', async () => {
        await render([rows[1], rows[3]])
        expect(await extract({ limit: 10 })).toStrictEqual([
          extracted(rows[0]),
          rendered(rows[1], text(rows[1])),
          extracted(rows[2]),
          rendered(rows[3], text(rows[3])),
        ])
        expect(await extract({ limit: 10 }, 'live', 'another key')).toStrictEqual(rows.map(extracted))
      })

      it('are replaced by a later rendering, whatever its key', async () => {
        await render(rows)
        await render([rows[0]], 'another key')
        expect(await extract({ limit: 10 }, 'live', 'another key')).toStrictEqual([
          rendered(rows[0], text(rows[0], 'another key')),
          ...rows.slice(1).map(extracted),
        ])
        expect((await extract({ limit: 10 }))[0]).toStrictEqual(extracted(rows[0]))
      })

      it('are dropped when the statement is changed', async () => {
        await render(rows)
        const changed = await store.adminEdits.updateStatement(companyId, rows[2].id, {
          modified_at: minute(9),
          status: 'paid',
          payment: 42,
        })
        expect(changed).toStrictEqual({ ...rows[2], modified_at: minute(9), status: 'paid', payment: 42 })
        const found = await extract({ limit: 10 })
        expect(found).toStrictEqual([
          rendered(rows[0], text(rows[0])),
          rendered(rows[1], text(rows[1])),
          extracted(changed!),
          rendered(rows[3], text(rows[3])),
        ])
      })

      it('of a user’s statements are left by users.save, whatever it changes', async () => {
        const [owner, other] = [aUser(companyId), aUser(companyId)]
        await store.users.save(companyId, [owner, other])
        const mine = byId([
          aStatement(companyId, { user_id: owner.id }),
          aStatement(companyId, { user_id: owner.id }),
          aStatement(companyId, { user_id: other.id }),
        ])
        await store.statements.insertMany(mine)
        await render([...rows, ...mine])
        const all = byId([...rows, ...mine])
        const allRendered = all.map((statement) => rendered(statement, text(statement)))
        expect(await extract({ limit: 10 })).toStrictEqual(allRendered)

        // The same email (and a new user) changes nothing.
        await store.users.save(companyId, [{ ...owner, name: 'Renamed' }, aUser(companyId)])
        expect(await extract({ limit: 10 })).toStrictEqual(allRendered)

        // Another email, even only its case: users.save leaves statements alone (no writer changes an email).
        await store.users.save(companyId, [{ ...owner, email: owner.email.toUpperCase() }])
        expect(await extract({ limit: 10 })).toStrictEqual(allRendered)
      })

      it('are not part of the statement: `page` and `list` return it as written', async () => {
        await render(rows)
        expect(await store.statements.page(companyId, 'live', { limit: 10 })).toStrictEqual(rows)
        expect(await store.statements.list(companyId, 'live', { offset: 0, limit: 10 })).toStrictEqual(rows)
      })

      it('are saved for the environment and company given only; an unknown id is ignored', async () => {
        const [sandbox] = byId([aStatement(companyId, { environment: 'sandbox' })])
        await store.statements.insertMany([sandbox])
        await render([sandbox, aStatement(companyId)], KEY, 'live')
        expect(await extract({ limit: 10 }, 'sandbox')).toStrictEqual([extracted(sandbox)])
        const stranger = aCompany()
        await store.companies.insert(stranger)
        await store.statements.saveRenderings(stranger.id, 'live', [{ id: rows[0].id, key: KEY, text: 'not this one' }])
        expect(await extract({ limit: 10 })).toStrictEqual(rows.map(extracted))
      })

      it('pageToRender: the fields of the statements without a rendering for the key, in id order, after the id given', async () => {
        await render([rows[1]])
        await render([rows[2]], 'another key')
        const toRender = (afterId: string | null, limit: number, key = KEY) =>
          store.statements.pageToRender(companyId, 'live', key, afterId, limit)
        expect(await toRender(null, 10)).toStrictEqual([rows[0], rows[2], rows[3]].map(fieldsOf))
        expect(await toRender(null, 2)).toStrictEqual([rows[0], rows[2]].map(fieldsOf))
        expect(await toRender(rows[0].id, 10)).toStrictEqual([rows[2], rows[3]].map(fieldsOf))
        expect(await toRender(rows[3].id, 10)).toStrictEqual([])
        expect(await toRender(null, 10, 'another key')).toStrictEqual([rows[0], rows[1], rows[3]].map(fieldsOf))
        expect(await store.statements.pageToRender(companyId, 'sandbox', KEY, null, 10)).toStrictEqual([])
        expect(await store.statements.pageToRender(aCompany().id, 'live', KEY, null, 10)).toStrictEqual([])
      })

      it('are saved with the transaction they are saved in, or not at all', async () => {
        await expect(
          store.transaction(async (tx) => {
            await tx.statements.saveRenderings(companyId, 'live', [{ id: rows[0].id, key: KEY, text: text(rows[0]) }])
            expect((await tx.statements.pageForExtraction(companyId, 'live', { limit: 1 }, KEY))[0]).toStrictEqual(
              rendered(rows[0], text(rows[0])),
            )
            throw new Error('abandon')
          }),
        ).rejects.toThrow('abandon')
        expect((await extract({ limit: 1 }))[0]).toStrictEqual(extracted(rows[0]))
      })
    })
  })
}
