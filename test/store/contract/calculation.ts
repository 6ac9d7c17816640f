import { beforeEach, describe, expect, it } from 'vitest'
import { newId } from '../../../src/ids.ts'
import type { Plan } from '../../../src/store/model.ts'
import { type Store, StoreConflictError } from '../../../src/store/port.ts'
import { aCommissionLine, aCompany, aDataTable, aQuota, aQuotaValue, aRecord, aStatement, byId, minute } from '../builders.ts'
import { storePerTest, type StoreAdapter } from './support.ts'

/** What the calculation engine reads and writes: plans, rates, records by id, results by cell and by record. */
export function calculationContract(adapter: StoreAdapter): void {
  describe('calculation', () => {
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

    function aPlan(overrides: Partial<Plan> = {}): Plan {
      return {
        id: newId(),
        company_id: companyId,
        environment: 'live',
        name: `Plan ${newId()}`,
        table_id: newId(),
        user_field: 'owner',
        date_field: 'close_date',
        amount_field: 'amount',
        frequency: 'monthly',
        rate: 0.05,
        filters: [{ field: 'deal_types', contains: 'new' }],
        quota_id: newId(),
        tiers: [{ from: 1, rate: 0.1, name: 'gold' }],
        tier_mode: 'marginal',
        metrics: { attainment: 'attainment', tier: null, bonus: 'bonus' },
        created_at: minute(0),
        modified_at: minute(0),
        ...overrides,
      }
    }

    it('keeps plans: saved, replaced, listed in creation order, deleted; a name is unique per environment', async () => {
      const first = aPlan({ name: 'Sales' })
      const second = aPlan({ name: 'Sales', environment: 'sandbox' })
      await store.plans.save([first, second])
      expect(await store.plans.get(companyId, first.id)).toStrictEqual(first)
      expect(await store.plans.list(companyId)).toStrictEqual(byId([first, second]))
      expect(await store.plans.get(strangerId, first.id)).toBeNull()

      const renamed = { ...first, rate: 0.07, tiers: [], modified_at: minute(2) }
      await store.plans.save([renamed])
      expect(await store.plans.get(companyId, first.id)).toStrictEqual(renamed)
      await expect(store.plans.save([aPlan({ name: 'Sales' })])).rejects.toBeInstanceOf(StoreConflictError)

      expect(await store.plans.delete(strangerId, first.id)).toBe(false)
      expect(await store.plans.delete(companyId, first.id)).toBe(true)
      expect(await store.plans.list(companyId)).toStrictEqual([second])
    })

    it('deletes the plans with their company', async () => {
      await store.plans.save([aPlan()])
      await store.companies.delete(companyId)
      expect(await store.plans.list(companyId)).toStrictEqual([])
    })

    it("sets a company's exchange rates", async () => {
      expect(await store.companies.setExchangeRates(companyId, { USD: 0.9, GBP: 1.15 })).toBe(true)
      expect((await store.companies.get(companyId))?.exchange_rates).toStrictEqual({ USD: 0.9, GBP: 1.15 })
      expect(await store.companies.setExchangeRates(newId(), { USD: 1 })).toBe(false)
      expect((await store.companies.get(strangerId))?.exchange_rates ?? {}).toStrictEqual({})
    })

    it('reads records by id and walks a table in id order', async () => {
      const table = aDataTable(companyId)
      await store.dataTables.insert(table)
      const records = Array.from({ length: 5 }, () => aRecord(companyId, table.id))
      await store.records.upsert(companyId, records)
      const found = await store.records.getMany(companyId, table.id, [records[1].id, records[3].id, newId()])
      expect(byId([...found.values()])).toStrictEqual(byId([records[1], records[3]]))
      expect([...found.keys()].toSorted()).toStrictEqual([records[1].id, records[3].id].toSorted())
      expect(await store.records.getMany(strangerId, table.id, [records[1].id])).toStrictEqual(new Map())

      const sorted = byId(records)
      expect(await store.records.page(companyId, table.id, null, 2)).toStrictEqual(sorted.slice(0, 2))
      expect(await store.records.page(companyId, table.id, sorted[1].id, 10)).toStrictEqual(sorted.slice(2))
      expect(await store.records.page(strangerId, table.id, null, 10)).toStrictEqual([])
    })

    it("finds a plan's statements by cell and by user, saves them over the stored ones and deletes them", async () => {
      const planId = newId()
      const [ann, bob] = [newId(), newId()]
      const calculated = (user: string, period: string) =>
        aStatement(companyId, { user_id: user, plan_id: planId, period, date: `${period}-01`, status: 'pending' })
      const annMarch = calculated(ann, '2026-03')
      const annApril = calculated(ann, '2026-04')
      const bobMarch = calculated(bob, '2026-03')
      const loaded = aStatement(companyId, { user_id: ann })
      const otherPlan = aStatement(companyId, { user_id: ann, plan_id: newId(), period: '2026-03' })
      await store.statements.insertMany([annMarch, annApril, bobMarch, loaded, otherPlan])

      expect(await store.statements.findOfPlan(companyId, planId)).toStrictEqual(byId([annMarch, annApril, bobMarch]))
      const cells = [
        { user_id: ann, period: '2026-03' },
        { user_id: bob, period: '2026-03' },
        { user_id: bob, period: '2026-09' },
      ]
      expect(await store.statements.findOfPlan(companyId, planId, { cells })).toStrictEqual(byId([annMarch, bobMarch]))
      expect(await store.statements.findOfPlan(companyId, planId, { userIds: [ann] })).toStrictEqual(byId([annMarch, annApril]))
      expect(await store.statements.findOfPlan(companyId, planId, { cells: [] })).toStrictEqual([])
      expect(await store.statements.findOfPlan(strangerId, planId)).toStrictEqual([])

      const changed = { ...annMarch, payment: 99, modified_at: minute(9) }
      const added = calculated(bob, '2026-04')
      await store.statements.save([changed, added])
      expect(await store.statements.findOfPlan(companyId, planId, { userIds: [ann, bob] })).toStrictEqual(
        byId([changed, annApril, bobMarch, added]),
      )

      await store.statements.deleteMany(strangerId, [annApril.id])
      await store.statements.deleteMany(companyId, [annApril.id, bobMarch.id, newId()])
      expect(await store.statements.findOfPlan(companyId, planId)).toStrictEqual(byId([changed, added]))
      expect(await store.statements.count(companyId, 'live')).toBe(4)
    })

    it('deletes statements and lines by id however many ids it is given (more than one MongoDB command holds)', async () => {
      const table = aDataTable(companyId)
      await store.dataTables.insert(table)
      const [statement, keptStatement] = [aStatement(companyId), aStatement(companyId)]
      const [line, keptLine] = [aCommissionLine(companyId, table.id), aCommissionLine(companyId, table.id)]
      await store.statements.insertMany([statement, keptStatement])
      await store.commissionLines.insertMany([line, keptLine])
      // About 900,000 ids as one MongoDB `$in` list would be some 18 MB, over its 16 MiB limit on a command.
      const unknown = Array.from({ length: 900_000 }, () => newId())
      await store.statements.deleteMany(companyId, [...unknown, statement.id])
      await store.commissionLines.deleteMany(companyId, [line.id, ...unknown])
      expect(await store.statements.list(companyId, 'live', { offset: 0, limit: 10 })).toStrictEqual([keptStatement])
      expect(await store.commissionLines.list(companyId, table.id, { offset: 0, limit: 10 })).toStrictEqual([keptLine])
    })

    it('names the plans whose statements are stated under a plan name, per environment, deleted plans included', async () => {
      const [first, second] = byId([{ id: newId() }, { id: newId() }]).map((plan) => plan.id)
      await store.statements.insertMany([
        aStatement(companyId, { plan: 'Sales', plan_id: second, period: '2026-03' }),
        aStatement(companyId, { plan: 'Sales', plan_id: first, period: '2026-03' }),
        aStatement(companyId, { plan: 'Sales', plan_id: first, period: '2026-04' }),
        aStatement(companyId, { plan: 'Sales', plan_id: null }),
        aStatement(companyId, { plan: 'Sales', plan_id: newId(), environment: 'sandbox', period: '2026-03' }),
        aStatement(companyId, { plan: 'Other', plan_id: newId(), period: '2026-03' }),
        aStatement(strangerId, { plan: 'Sales', plan_id: newId(), period: '2026-03' }),
      ])
      expect(await store.statements.planIdsNamed(companyId, 'live', 'Sales')).toStrictEqual([first, second])
      expect(await store.statements.planIdsNamed(companyId, 'live', 'sales')).toStrictEqual([])
      expect(await store.statements.planIdsNamed(strangerId, 'sandbox', 'Sales')).toStrictEqual([])
    })

    it('tells whether statements or lines were loaded under a plan name (no plan calculated them), per environment', async () => {
      const table = aDataTable(companyId)
      await store.dataTables.insert(table)
      await store.statements.insertMany([
        aStatement(companyId, { plan: 'Loaded', plan_id: null }),
        aStatement(companyId, { plan: 'Calculated', plan_id: newId(), period: '2026-03' }),
        aStatement(strangerId, { plan: 'Theirs', plan_id: null }),
      ])
      await store.commissionLines.insertMany([
        aCommissionLine(companyId, table.id, { plan: 'Lines only', plan_id: null }),
        aCommissionLine(companyId, table.id, { plan: 'Calculated', plan_id: newId(), period: '2026-03' }),
      ])
      const statementsNamed = (name: string, environment: 'live' | 'sandbox' = 'live', company = companyId) =>
        store.statements.loadedNamed(company, environment, name)
      expect([await statementsNamed('Loaded'), await statementsNamed('Calculated'), await statementsNamed('loaded')]).toEqual([
        true,
        false,
        false,
      ])
      expect([
        await statementsNamed('Loaded', 'sandbox'),
        await statementsNamed('Theirs'),
        await statementsNamed('Theirs', 'live', strangerId),
      ]).toEqual([false, false, true])
      expect(await store.commissionLines.loadedNamed(companyId, 'live', 'Lines only')).toBe(true)
      expect(await store.commissionLines.loadedNamed(companyId, 'live', 'Calculated')).toBe(false)
      expect(await store.commissionLines.loadedNamed(companyId, 'sandbox', 'Lines only')).toBe(false)
    })

    it('saves a statement over the stored one of its id in the other environment (its plan moved there)', async () => {
      const statement = aStatement(companyId, { plan_id: newId(), period: '2026-03' })
      await store.statements.insertMany([statement])
      const moved = { ...statement, environment: 'sandbox' as const, payment: 1 }
      await store.statements.save([moved])
      expect(await store.statements.page(companyId, 'live', { limit: 10 })).toStrictEqual([])
      expect(await store.statements.page(companyId, 'sandbox', { limit: 10 })).toStrictEqual([moved])
      expect(await store.statements.findOfPlan(companyId, statement.plan_id as string)).toStrictEqual([moved])
    })

    it('drops the rendering of a statement saved again', async () => {
      const statement = aStatement(companyId, { plan_id: newId(), period: '2026-03' })
      await store.statements.insertMany([statement])
      await store.statements.saveRenderings(companyId, 'live', [{ id: statement.id, key: 'k', text: '{"rendered":true}' }])
      expect(await store.statements.pageForExtraction(companyId, 'live', { limit: 10 }, 'k')).toStrictEqual([
        { id: statement.id, rendering: '{"rendered":true}' },
      ])
      await store.statements.save([{ ...statement, payment: 1 }])
      const [read] = await store.statements.pageForExtraction(companyId, 'live', { limit: 10 }, 'k')
      expect(read.rendering).toBeNull()
    })

    it("finds a plan's lines by cell and by user, saves them and deletes them", async () => {
      const table = aDataTable(companyId)
      await store.dataTables.insert(table)
      const planId = newId()
      const [ann, bob] = [newId(), newId()]
      const [recordA, recordB] = [newId(), newId()]
      const line = (user: string, period: string, record: string) =>
        aCommissionLine(companyId, table.id, { user_id: user, plan_id: planId, period, record_id: record })
      const annMarch = line(ann, '2026-03', recordA)
      const annMarchToo = line(ann, '2026-03', recordB)
      const bobApril = line(bob, '2026-04', recordA)
      const loaded = aCommissionLine(companyId, table.id, { user_id: ann, record_id: recordA })
      await store.commissionLines.insertMany([annMarch, annMarchToo, bobApril, loaded])

      expect(await store.commissionLines.findOfPlan(companyId, planId, { cells: [{ user_id: ann, period: '2026-03' }] })).toStrictEqual(
        byId([annMarch, annMarchToo]),
      )
      expect(await store.commissionLines.findOfPlan(companyId, planId, { userIds: [bob] })).toStrictEqual([bobApril])

      const changed = { ...annMarch, commission: 7, modified_at: minute(8) }
      await store.commissionLines.save([changed])
      expect(
        await store.commissionLines.page(companyId, table.id, { limit: 10, modifiedAfter: { at: minute(7), inclusive: false } }),
      ).toStrictEqual([changed])

      await store.commissionLines.deleteMany(companyId, [annMarchToo.id, bobApril.id])
      expect(await store.commissionLines.findOfPlan(companyId, planId)).toStrictEqual([changed])
      expect(await store.commissionLines.count(companyId, table.id)).toBe(2)
    })

    it("reads the figures of a plan's lines by cell, and sets new figures on lines of a table", async () => {
      const table = aDataTable(companyId)
      await store.dataTables.insert(table)
      const planId = newId()
      const ann = newId()
      const line = aCommissionLine(companyId, table.id, {
        user_id: ann,
        plan_id: planId,
        period: '2026-03',
        date: '2026-03-04',
        commission: 12.5,
        metrics: { bonus: { value: 1, currency: 'EUR' } },
        record_values: { deal_id: 'D-7', amount: { value: 250, currency: 'USD' }, name: 'long text the figures leave out' },
      })
      const elsewhere = aCommissionLine(companyId, table.id, { user_id: ann, plan_id: planId, period: '2026-04' })
      await store.commissionLines.insertMany([line, elsewhere])
      const fields = { amount: 'amount', externalId: 'deal_id' }
      const figures = await store.commissionLines.figuresOfPlan(companyId, planId, [{ user_id: ann, period: '2026-03' }], fields)
      expect(figures).toStrictEqual([
        {
          id: line.id,
          record_id: line.record_id,
          user_id: ann,
          period: '2026-03',
          date: '2026-03-04',
          plan: line.plan,
          commission: 12.5,
          currency: line.currency,
          metrics: { bonus: { value: 1, currency: 'EUR' } },
          amount: { value: 250, currency: 'USD' },
          external_id: 'D-7',
        },
      ])
      expect(
        await store.commissionLines.figuresOfPlan(companyId, planId, [{ user_id: ann, period: '2026-03' }], {
          amount: 'nothing',
          externalId: 'deal_id',
        }),
      ).toMatchObject([{ amount: null }])
      // A field named like an Object.prototype member, which the line's values do not hold, is not inherited.
      const inherited = await store.commissionLines.figuresOfPlan(companyId, planId, [{ user_id: ann, period: '2026-03' }], {
        amount: 'valueOf',
        externalId: 'toString',
      })
      expect(inherited.map(({ amount, external_id }) => ({ amount, external_id }))).toStrictEqual([{ amount: null, external_id: null }])
      expect(await store.commissionLines.figuresOfPlan(strangerId, planId, [{ user_id: ann, period: '2026-03' }], fields)).toStrictEqual([])

      const figuresAfter = { commission: 20, currency: 'USD', metrics: { bonus: { value: 3, currency: 'USD' } }, modified_at: minute(30) }
      await store.commissionLines.reprice(companyId, table.id, [{ id: line.id, ...figuresAfter }])
      await store.commissionLines.reprice(strangerId, table.id, [
        { id: elsewhere.id, commission: 99, currency: 'EUR', metrics: {}, modified_at: minute(30) },
      ])
      const repriced = { ...line, ...figuresAfter }
      expect(
        await store.commissionLines.page(companyId, table.id, { limit: 10, modifiedAfter: { at: minute(29), inclusive: false } }),
      ).toStrictEqual([repriced])
      expect(await store.commissionLines.findOfPlan(companyId, planId, { cells: [{ user_id: ann, period: '2026-04' }] })).toStrictEqual([
        elsewhere,
      ])
    })

    it('finds the quota values of some cells', async () => {
      const quota = aQuota(companyId, { frequency: 'monthly' })
      await store.quotas.insert(quota)
      const [ann, bob] = [newId(), newId()]
      const values = [
        aQuotaValue(companyId, quota.id, { user_id: ann, period: '2026-03' }),
        aQuotaValue(companyId, quota.id, { user_id: ann, period: '2026-04' }),
        aQuotaValue(companyId, quota.id, { user_id: bob, period: '2026-03' }),
      ]
      await store.quotaValues.insertMany(values)
      const cells = [
        { user_id: ann, period: '2026-04' },
        { user_id: bob, period: '2026-03' },
        { user_id: bob, period: '2026-05' },
      ]
      expect(byId(await store.quotaValues.findCells(companyId, quota.id, cells))).toStrictEqual(byId([values[1], values[2]]))
      expect(await store.quotaValues.findCells(strangerId, quota.id, cells)).toStrictEqual([])
      expect(await store.quotaValues.findCells(companyId, quota.id, [])).toStrictEqual([])
    })
  })
}
