import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { setExchangeRates } from '../src/admin/plans.ts'
import { recalculate } from '../src/calculation/recalculation.ts'
import { ManualClock } from '../src/clock.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import type { Fixture } from '../src/fixtures/schema.ts'
import type { Statement } from '../src/store/model.ts'
import type { Store } from '../src/store/port.ts'
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import { tempDataDir } from './helpers/process.ts'

/**
 * An incremental v2 sync reads a row once it is committed, and takes its mark from the service's time: a row must
 * not be stamped long before its commit. A calculation's rows were stamped before its transaction waited for the
 * store's write lock (up to 10 s behind another writer), and before its work (seconds for 200,000 deals).
 */

const LOADED_AT = '2026-06-01T00:00:00.000Z'

function company(): Fixture {
  return {
    company: { name: 'Stamps', default_currency: 'EUR', exchange_rates: { USD: 0.9 } },
    users: [{ email: 'rep@stamps.example', currency: 'USD' }],
    data_tables: [
      {
        key: 'deals',
        name: 'Deals',
        id_field: 'id',
        name_field: 'id',
        fields: [
          { api_key: 'id', name: 'Id', type: 'string' },
          { api_key: 'owner_id', name: 'Owner', type: 'string' },
          { api_key: 'close_date', name: 'Close date', type: 'datetime' },
          { api_key: 'amount', name: 'Amount', type: 'amount' },
        ],
        records: [
          { id: 'D-1', owner_id: 'rep@stamps.example', close_date: '2026-05-10T10:00:00Z', amount: 1000, amount_currency: 'EUR' },
          { id: 'D-2', owner_id: 'rep@stamps.example', close_date: '2026-05-20T10:00:00Z', amount: 3000, amount_currency: 'EUR' },
        ],
      },
    ],
    plans: [
      {
        name: 'Sales',
        data_table: 'deals',
        user_field: 'owner_id',
        date_field: 'close_date',
        amount_field: 'amount',
        frequency: 'monthly',
        rate: 0.05,
      },
    ],
  } as Fixture
}

async function liveStatements(store: Store, companyId: string): Promise<Statement[]> {
  return store.statements.page(companyId, 'live', { limit: 100 })
}

describe("a calculation's rows are stamped close to their commit", () => {
  it('after the wait for the write lock another writer held', async () => {
    const file = join(tempDataDir(), 'commission-api.sqlite')
    const store = openSqliteStore(file)
    const holder = new DatabaseSync(file)
    try {
      const clock = new ManualClock(LOADED_AT)
      const { company_id: companyId } = await loadFixture(store, clock, company())
      const before = await liveStatements(store, companyId)
      expect(before.map((statement) => statement.payment)).toEqual([expect.any(Number)])

      holder.exec('BEGIN IMMEDIATE')
      const edit = setExchangeRates(store, clock, companyId, { USD: 0.8 })
      await sleep(100)
      clock.advance(60_000)
      holder.exec('COMMIT')
      await edit

      const [after] = await liveStatements(store, companyId)
      expect(after.payment).not.toBe(before[0].payment)
      expect(after.modified_at).toBe('2026-06-01T00:01:00.000Z')
    } finally {
      holder.close()
      await store.close()
    }
  })

  it('as each plan writes them, when the calculation is given the time as it goes', async () => {
    const store = openSqliteStore(':memory:')
    try {
      const { company_id: companyId } = await loadFixture(store, new ManualClock(LOADED_AT), company())
      const written = '2026-06-01T00:00:07.000Z'
      await store.transaction(async (tx) => {
        await tx.companies.setExchangeRates(companyId, { USD: 0.8 })
        await recalculate(tx, companyId, { everything: true }, { now: '2026-06-01T00:00:01.000Z', stamp: () => written })
      })
      const lines = await store.commissionLines.findOfPlan(companyId, (await store.plans.list(companyId))[0].id)
      expect(lines.map((line) => line.modified_at)).toEqual([written, written])
      expect((await liveStatements(store, companyId)).map((statement) => statement.modified_at)).toEqual([written])
    } finally {
      await store.close()
    }
  })

  it("once every plan is calculated: a plan's rows do not wait, stamped, for the plans after it", async () => {
    const store = openSqliteStore(':memory:')
    try {
      const fixture = company()
      fixture.plans = [fixture.plans![0], { ...fixture.plans![0], name: 'Sales again', rate: 0.07 }]
      const { company_id: companyId } = await loadFixture(store, new ManualClock(LOADED_AT), fixture)
      // Each read of a plan's records takes a minute: a plan of 200,000 deals calculated after another took seconds,
      // while the other's rows, stamped, waited for the commit, and a sync that walked meanwhile missed them.
      const clock = new ManualClock('2026-06-01T00:00:01.000Z')
      await store.transaction(async (tx) => {
        await tx.companies.setExchangeRates(companyId, { USD: 0.8 })
        const records = new Proxy(tx.records, {
          get: (target, name, receiver) =>
            name === 'page'
              ? (...args: Parameters<typeof target.page>) => {
                  clock.advance(60_000)
                  return target.page(...args)
                }
              : Reflect.get(target, name, receiver),
        })
        const slow = new Proxy(tx, {
          get: (target, name, receiver) => (name === 'records' ? records : Reflect.get(target, name, receiver)),
        })
        await recalculate(slow, companyId, { everything: true }, { now: clock.now().toISOString(), stamp: () => clock.now().toISOString() })
      })
      const readsEnded = clock.now().toISOString()
      const plans = await store.plans.list(companyId)
      for (const plan of plans) {
        const lines = await store.commissionLines.findOfPlan(companyId, plan.id)
        expect(lines.map((line) => line.modified_at)).toEqual([readsEnded, readsEnded])
      }
      expect((await liveStatements(store, companyId)).map((statement) => statement.modified_at)).toEqual([readsEnded, readsEnded])
    } finally {
      await store.close()
    }
  })

  it("writes each plan's rows as it is calculated where they are not stamped as written (a load, a dry run): it holds one plan's writes, not every plan's", async () => {
    const store = openSqliteStore(':memory:')
    try {
      const fixture = company()
      fixture.plans = [fixture.plans![0], { ...fixture.plans![0], name: 'Sales again', rate: 0.07 }]
      const { company_id: companyId } = await loadFixture(store, new ManualClock(LOADED_AT), fixture)
      const loading = { statusOf: () => 'pending' as const }
      for (const [rate, options] of [
        [0.8, { now: '2026-06-01T00:00:01.000Z' }],
        [0.7, { now: '2026-06-01T00:00:02.000Z', loading }],
      ] as const) {
        const calls: string[] = []
        await store.transaction(async (tx) => {
          await tx.companies.setExchangeRates(companyId, { USD: rate })
          const records = traced(tx.records, 'page', 'read', calls)
          const lines = traced(tx.commissionLines, 'save', 'write', calls)
          const watched = new Proxy(tx, {
            get: (target, name, receiver) =>
              name === 'records' ? records : name === 'commissionLines' ? lines : Reflect.get(target, name, receiver),
          })
          await recalculate(watched, companyId, { everything: true }, options)
        })
        expect(calls).toEqual(['read', 'write', 'read', 'write'])
      }
    } finally {
      await store.close()
    }
  })
})

/** `target` whose `method` notes `call` in `calls` each time it is called. */
function traced<T extends object>(target: T, method: keyof T, call: string, calls: string[]): T {
  return new Proxy(target, {
    get: (inner, name, receiver) =>
      name === method
        ? (...args: unknown[]) => {
            calls.push(call)
            return (Reflect.get(inner, name, receiver) as (...args: unknown[]) => unknown).apply(inner, args)
          }
        : Reflect.get(inner, name, receiver),
  })
}
