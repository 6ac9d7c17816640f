import { describe, expect, it } from 'vitest'
import type { Store } from '../../../src/store/port.ts'
import { aCommissionLine, aDataTable, aStatement } from '../builders.ts'
import { storePerTest, type StoreAdapter } from './support.ts'
import { aStoredCompany } from './world.ts'

export function currenciesContract(adapter: StoreAdapter): void {
  describe('currencies in use', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

    it('statements: the currencies of those with a payment, and per metric those of its amounts and numbers', async () => {
      const companyId = await aStoredCompany(store)
      const other = await aStoredCompany(store)
      await store.statements.insertMany([
        aStatement(companyId, { currency: 'USD', metrics: { bonus: { value: 1, currency: 'GBP' }, rate: 0.5, tier: 'gold', none: null } }),
        aStatement(companyId, { currency: 'EUR', metrics: { bonus: { value: 2 }, rate: 0.7, odd: { value: 'x', currency: 'JPY' } } }),
        aStatement(companyId, { currency: 'CHF', payment: null, metrics: {} }),
        aStatement(companyId, { currency: 'SEK', environment: 'sandbox', metrics: { bonus: { value: 3, currency: 'SEK' } } }),
        aStatement(other, { currency: 'NOK', metrics: { bonus: { value: 4, currency: 'NOK' } } }),
      ])
      expect(await store.statements.currenciesInUse(companyId, 'live')).toStrictEqual({
        rows: ['EUR', 'USD'],
        metrics: new Map([
          ['bonus', ['EUR', 'GBP']],
          ['rate', ['EUR', 'USD']],
        ]),
      })
      expect(await store.statements.currenciesInUse(companyId, 'sandbox')).toStrictEqual({
        rows: ['SEK'],
        metrics: new Map([['bonus', ['SEK']]]),
      })
      expect(await store.statements.currenciesInUse(await aStoredCompany(store), 'live')).toStrictEqual({ rows: [], metrics: new Map() })
    })

    it("commission lines: the table's lines' currencies, per metric, and per record value that is an amount", async () => {
      const companyId = await aStoredCompany(store)
      const [table, otherTable] = [aDataTable(companyId), aDataTable(companyId, { key: 'other' })]
      await store.dataTables.insert(table)
      await store.dataTables.insert(otherTable)
      await store.commissionLines.insertMany([
        aCommissionLine(companyId, table.id, {
          currency: 'USD',
          metrics: { bonus: 3 },
          record_values: { amount: { value: 5, currency: 'GBP' }, count: 3, name: 'x' },
        }),
        aCommissionLine(companyId, table.id, {
          currency: 'EUR',
          metrics: { bonus: { value: 1, currency: 'JPY' } },
          record_values: { amount: { value: 6, currency: 'EUR' }, fee: { value: 1 } },
        }),
        aCommissionLine(companyId, otherTable.id, {
          currency: 'SEK',
          metrics: { bonus: 1 },
          record_values: { amount: { value: 1, currency: 'SEK' } },
        }),
      ])
      expect(await store.commissionLines.currenciesInUse(companyId, table.id)).toStrictEqual({
        rows: ['EUR', 'USD'],
        metrics: new Map([['bonus', ['JPY', 'USD']]]),
        recordValues: new Map([['amount', ['EUR', 'GBP']]]),
      })
      expect(await store.commissionLines.currenciesInUse(await aStoredCompany(store), table.id)).toStrictEqual({
        rows: [],
        metrics: new Map(),
        recordValues: new Map(),
      })
    })

    it('keys named like Object.prototype members (valueOf, toString) are listed as any other', async () => {
      const companyId = await aStoredCompany(store)
      const table = aDataTable(companyId)
      await store.dataTables.insert(table)
      await store.statements.insertMany([
        aStatement(companyId, { currency: 'USD', metrics: { valueOf: { value: 1, currency: 'GBP' }, toString: 2 } }),
      ])
      await store.commissionLines.insertMany([
        aCommissionLine(companyId, table.id, {
          currency: 'EUR',
          metrics: { valueOf: 3 },
          record_values: { toString: { value: 5, currency: 'JPY' } },
        }),
      ])
      expect((await store.statements.currenciesInUse(companyId, 'live')).metrics).toStrictEqual(
        new Map([
          ['toString', ['USD']],
          ['valueOf', ['GBP']],
        ]),
      )
      const lines = await store.commissionLines.currenciesInUse(companyId, table.id)
      expect(lines.metrics).toStrictEqual(new Map([['valueOf', ['EUR']]]))
      expect(lines.recordValues).toStrictEqual(new Map([['toString', ['JPY']]]))
    })
  })
}
