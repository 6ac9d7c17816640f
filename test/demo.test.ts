import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { calculationProblems } from '../src/admin/plans.ts'
import { hashApiKey } from '../src/auth/api-keys.ts'
import { ManualClock } from '../src/clock.ts'
import { demoFixture } from '../src/fixtures/demo.ts'
import { demoKeyFile, ensureDemoCompany } from '../src/fixtures/demo-company.ts'
import { loadFixture, loadFixtureIntoEmptyStore } from '../src/fixtures/load-fixture.ts'
import type { CommissionLine, DataTable, Quota, Statement, User } from '../src/store/model.ts'
import { type Store, StoreBusyError } from '../src/store/port.ts'
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import { tempDataDir } from './helpers/process.ts'
import { startTestServer } from './helpers/server.ts'
import { openTestStore } from './helpers/test-store.ts'

const ALL = { limit: 100_000 }
const EVERYONE = { offset: 0, limit: 100_000 }

/** Stores opened by `loaded`, closed (and their data dropped) after the file's tests. */
const opened: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const dispose of opened.splice(0)) await dispose()
})

async function loaded(fixture: unknown): Promise<{ store: Store; companyId: string }> {
  const { store, dispose } = await openTestStore()
  opened.push(dispose)
  const { company_id: companyId } = await loadFixture(store, new ManualClock(), fixture)
  return { store, companyId }
}

function countBy<T>(items: T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1
  return counts
}

/** Every calculated statement's payment is the sum of its cell's commission lines, to the cent. */
function expectTotalsAreTheirLines(statements: readonly Statement[], lines: readonly CommissionLine[]): void {
  const sums = new Map<string, number>()
  for (const line of lines) {
    const key = `${line.plan_id}|${line.user_id}|${line.period}`
    sums.set(key, (sums.get(key) ?? 0) + Math.round(line.commission * 100))
  }
  for (const statement of statements) {
    expect(statement.plan_id).not.toBeNull()
    expect(statement.payment).toBe((sums.get(`${statement.plan_id}|${statement.user_id}|${statement.period}`) ?? 0) / 100)
  }
}

describe('demoFixture, loaded with the defaults', () => {
  let store: Store
  let companyId: string
  let users: User[]
  let tables: DataTable[]
  let quotas: Quota[]

  beforeAll(async () => {
    ;({ store, companyId } = await loaded(demoFixture()))
    users = await store.users.list(companyId, EVERYONE)
    tables = await store.dataTables.list(companyId)
    quotas = await store.quotas.list(companyId)
  })

  it('describes the demo company', async () => {
    const company = await store.companies.get(companyId)
    expect(company).toMatchObject({ name: 'Demo Company', public_api_enabled: true, default_currency: 'EUR', fiscal_year_start_month: 1 })
  })

  it('has 25 users: one archived, one inactive, one pending, the rest active, paid in EUR and USD', () => {
    expect(users).toHaveLength(25)
    expect(countBy(users, (user) => user.status)).toEqual({ active: 22, archived: 1, inactive: 1, pending: 1 })
    expect(new Set(users.map((user) => user.currency))).toEqual(new Set(['EUR', 'USD']))
    expect(new Set(users.map((user) => user.email)).size).toBe(25)
    for (const user of users) expect(user.email).toMatch(/^[a-z]+(\.[a-z]+\d*)?@demo\.example$/)
    expect(users[0]).toMatchObject({ email: 'admin@demo.example', status: 'active' })
  })

  it('gives the API key to the active admin', async () => {
    const keys = await store.apiKeys.list(companyId)
    expect(keys.map((key) => key.user_id)).toEqual([users[0].id])
  })

  it('defines amount, string and date user attributes, with values', async () => {
    const definitions = await store.userAttributes.list(companyId)
    expect(definitions.map((definition) => [definition.api_key, definition.type])).toEqual([
      ['base_salary', 'amount'],
      ['region', 'string'],
      ['last_review', 'date'],
    ])
    expect(users[1].attributes).toMatchObject({
      base_salary: expect.any(Number),
      base_salary_currency: users[1].currency,
      region: expect.any(String),
    })
  })

  it('attributes managers and teams', async () => {
    const managers = await store.attributions.listManagers(companyId)
    const groups = await store.attributions.listGroups(companyId)
    expect(managers.length).toBeGreaterThanOrEqual(24)
    expect(new Set(groups.map((group) => group.group_dimension))).toEqual(new Set(['team']))
    expect(managers.some((manager) => manager.end_month !== null)).toBe(true)
  })

  it('defines the attainment, tier and bonus metrics', async () => {
    const metrics = await store.metrics.list(companyId)
    expect(metrics.map((metric) => [metric.api_key, metric.kind])).toEqual([
      ['attainment', 'percentage'],
      ['tier', 'enum'],
      ['bonus', 'amount'],
    ])
    expect(metrics[1].enum_values).toEqual(['bronze', 'silver', 'gold'])
    expect(metrics[2].currencies).toEqual(['EUR', 'USD'])
  })

  it('has a live deals table of 600 records, each counted by the plans, and a small sandbox one', async () => {
    expect(tables.map((table) => [table.key, table.environment])).toEqual([
      ['deals', 'live'],
      ['deals', 'sandbox'],
    ])
    const [live, sandbox] = tables
    expect(live.fields.map((field) => [field.api_key, field.type])).toEqual([
      ['id', 'string'],
      ['name', 'string'],
      ['owner_id', 'string'],
      ['close_date', 'datetime'],
      ['product', 'string'],
      ['amount', 'amount'],
      ['deal_types', 'multi'],
    ])
    expect(live).toMatchObject({ id_field: 'id', name_field: 'name' })
    expect(await store.records.count(companyId, live.id)).toBe(600)
    expect(await store.records.count(companyId, sandbox.id)).toBeGreaterThanOrEqual(2)

    const records = await store.records.list(companyId, live.id, EVERYONE)
    expect(records[0].values).toMatchObject({ amount: { value: expect.any(Number), currency: expect.stringMatching(/^(EUR|USD)$/) } })
    expect(Array.isArray(records[0].values.deal_types)).toBe(true)
    const lines = await store.commissionLines.page(companyId, live.id, ALL)
    const plans = new Map((await store.plans.list(companyId)).map((plan) => [plan.name, plan.id]))
    const linesOf = (planName: string) =>
      new Map(lines.filter((line) => line.plan_id === plans.get(planName)).map((line) => [line.record_id, line]))
    const sales = linesOf('Sales plan')
    const newBusiness = linesOf('New business plan')
    const archived = users.find((user) => user.status === 'archived')
    for (const record of records) {
      const owner = users.find((user) => user.email === record.values.owner_id)
      const month = String(record.values.close_date).slice(0, 7)
      // Every deal earns on the sales plan, but an archived owner's after their last month.
      const earns = owner?.id !== archived?.id || month <= String(archived?.archived_until)
      expect(sales.has(record.id)).toBe(earns)
      expect(newBusiness.has(record.id)).toBe(earns && (record.values.deal_types as string[]).includes('new'))
      const line = sales.get(record.id)
      if (!line) continue
      expect(line).toMatchObject({
        user_id: owner?.id,
        date: String(record.values.close_date).slice(0, 10),
        currency: owner?.currency,
        period: month,
      })
    }
    expect(newBusiness.size).toBeGreaterThan(0)
    expect(
      records.some(
        (record) =>
          (record.values.amount as { currency: string }).currency !== users.find((user) => user.email === record.values.owner_id)?.currency,
      ),
    ).toBe(true)
  })

  it('has live and sandbox reporting structures of both types', async () => {
    const structures = await store.structures.list(companyId)
    const summary = structures.map((structure) => [structure.environment, structure.type, structure.name])
    expect(summary).toEqual([
      ['live', 'statement_reporting', 'Commission statements'],
      ['live', 'record_reporting', 'Deal commissions'],
      ['sandbox', 'statement_reporting', expect.any(String)],
      ['sandbox', 'record_reporting', expect.any(String)],
    ])
    expect(structures[0].metric_keys).toEqual(['attainment', 'tier', 'bonus'])
    expect(structures[1]).toMatchObject({ data_table_id: tables[0].id, metric_keys: ['bonus'] })
    expect(structures[1].field_keys).toEqual(['name', 'owner_id', 'close_date', 'product', 'amount', 'deal_types'])
    expect(structures[3].data_table_id).toBe(tables[1].id)
  })

  it('has statements calculated by its plans, older ones paid, then validated, the latest pending; each total the sum of its lines', async () => {
    const statements = await store.statements.page(companyId, 'live', ALL)
    expect(statements.length).toBeGreaterThan(200)
    expectTotalsAreTheirLines(statements, await store.commissionLines.page(companyId, tables[0].id, ALL))
    const plans = await store.plans.list(companyId)
    expect(plans.map((plan) => [plan.name, plan.frequency, plan.quota_id !== null, plan.tiers.length, plan.filters])).toEqual([
      ['Sales plan', 'monthly', true, 3, []],
      ['New business plan', 'quarterly', false, 0, [{ field: 'deal_types', contains: 'new' }]],
    ])
    for (const statement of statements) {
      expect(plans.map((plan) => plan.id)).toContain(statement.plan_id)
      // Dated on the first day of their period, as the documented examples are.
      expect(statement.date).toMatch(/^\d{4}-\d{2}-01$/)
      const month = statement.date.slice(0, 7)
      const expected =
        statement.period === '2025-12' || statement.period === '2025-Q4' ? 'pending' : month === '2025-11' ? 'validated' : 'paid'
      expect(statement.status).toBe(expected)
    }
    const sales = statements.filter((statement) => statement.plan === 'Sales plan')
    expect(new Set(sales.map((statement) => statement.date.slice(0, 7))).size).toBe(12)
    expect(new Set(sales.map((statement) => statement.metrics.tier))).toEqual(new Set(['bronze', 'silver', 'gold', null]))
    const pending = users.find((user) => user.status === 'pending')
    expect(statements.some((statement) => statement.user_id === pending?.id)).toBe(false)
    const currencyOf = new Map(users.map((user) => [user.id, user.currency]))
    for (const statement of statements) expect(statement.currency).toBe(currencyOf.get(statement.user_id))
    expect(await store.statements.count(companyId, 'sandbox')).toBe(1)
  })

  it('has plans that this version takes as they are defined: the dry run finds nothing in their definitions', async () => {
    const report = await calculationProblems(store, companyId)
    expect(report.map((plan) => plan.plan)).toEqual(['Sales plan', 'New business plan'])
    const definitions = report.flatMap((plan) => plan.problems).filter((problem) => problem.message.startsWith('its definition'))
    expect(definitions).toEqual([])
  })

  it('has the live quotas, an archived one and a sandbox one', () => {
    const summary = quotas.map((quota) => [quota.environment, quota.name, quota.type, quota.frequency, quota.status])
    expect(summary).toEqual([
      ['live', 'Monthly bookings', 'amount', 'monthly', 'active'],
      ['live', 'Quarterly attainment', 'percentage', 'quarterly', 'active'],
      ['live', 'Semester activity', 'float', 'semesterly', 'active'],
      ['live', 'Annual revenue', 'amount', 'annually', 'active'],
      ['live', 'Legacy target', 'amount', 'annually', 'archived'],
      ['sandbox', expect.any(String), 'amount', 'monthly', 'active'],
    ])
  })

  it('has quota values in each frequency format, one per user and period, and one of a user who no longer exists', async () => {
    const userIds = new Set(users.map((user) => user.id))
    const formats = [/^2025-(0[1-9]|1[0-2])$/, /^2025-Q[1-4]$/, /^2025-S[12]$/, /^2025$/]
    let orphans = 0
    for (const [index, format] of formats.entries()) {
      const values = await store.quotaValues.page(companyId, quotas[index].id, ALL)
      expect(values.length).toBeGreaterThan(0)
      for (const value of values) expect(value.period).toMatch(format)
      const cells = values.map((value) => `${value.user_id}/${value.period}`)
      expect(new Set(cells).size).toBe(cells.length)
      orphans += values.filter((value) => !userIds.has(value.user_id)).length
    }
    expect(orphans).toBeGreaterThanOrEqual(1)
    const quarterly = await store.quotaValues.page(companyId, quotas[1].id, ALL)
    for (const value of quarterly) expect(value.value).toBeLessThan(2)
    expect(await store.quotaValues.count(companyId, quotas[4].id)).toBeGreaterThan(0)
    expect(await store.quotaValues.count(companyId, quotas[5].id)).toBeGreaterThan(0)
  })
})

describe('demoFixture options', () => {
  it('gives the same document for the same seed and a different one for another seed', () => {
    expect(demoFixture()).toEqual(demoFixture({ seed: 'demo' }))
    expect(demoFixture({ seed: 7 })).toEqual(demoFixture({ seed: 7 }))
    expect(demoFixture({ seed: 'other' })).not.toEqual(demoFixture())
    expect(demoFixture({ seed: 'other' }).users.map((user) => user.email)).not.toEqual(demoFixture().users.map((user) => user.email))
  })

  it('never dates a modification after the base date', () => {
    const text = JSON.stringify(demoFixture())
    const stamps = [...text.matchAll(/"modified_at":"([^"]+)"/g)].map((match) => match[1])
    expect(stamps.length).toBeGreaterThan(500)
    for (const stamp of stamps) expect(Date.parse(stamp)).toBeLessThanOrEqual(Date.parse('2026-01-01T00:00:00Z'))
  })

  it('scales users, months and deals', async () => {
    const fixture = demoFixture({ users: 5, months: 3, deals: 7 })
    expect(fixture.users).toHaveLength(5)
    const { store, companyId } = await loaded(fixture)
    const users = await store.users.list(companyId, EVERYONE)
    expect(countBy(users, (user) => user.status)).toEqual({ active: 2, archived: 1, inactive: 1, pending: 1 })
    expect(new Set(users.map((user) => user.currency))).toEqual(new Set(['EUR', 'USD']))
    const statements = await store.statements.page(companyId, 'live', ALL)
    expect(new Set(statements.map((statement) => statement.status)).size).toBe(3)
    const [live] = await store.dataTables.list(companyId)
    expect(await store.records.count(companyId, live.id)).toBe(7)
    const lines = await store.commissionLines.page(companyId, live.id, ALL)
    expect(lines.length).toBeGreaterThan(0)
    expectTotalsAreTheirLines(statements, lines)
  })

  it('leaves the other parts alone when only the number of deals changes', () => {
    const few = demoFixture({ deals: 10 })
    const many = demoFixture({ deals: 50 })
    expect(many.users).toEqual(few.users)
    expect(many.statements).toEqual(few.statements)
    expect(many.quotas).toEqual(few.quotas)
    expect(many.data_tables?.[0].records?.slice(0, 10)).toEqual(few.data_tables?.[0].records)
  })

  it('refuses fewer than 5 users, counts that are not whole, and counts past what one process builds', () => {
    expect(() => demoFixture({ users: 4 })).toThrow(RangeError)
    expect(() => demoFixture({ users: 4 })).toThrow(/from 5 \(an admin and one user of each status\)/)
    expect(() => demoFixture({ users: 100_001 })).toThrow(/to 100000/)
    expect(() => demoFixture({ months: 1_201 })).toThrow(/from 1 to 1200/)
    expect(() => demoFixture({ deals: 1_000_001 })).toThrow(/from 0 to 1000000/)
    expect(() => demoFixture({ users: 10.5 })).toThrow(RangeError)
    expect(() => demoFixture({ months: 0 })).toThrow(RangeError)
    expect(() => demoFixture({ deals: -1 })).toThrow(RangeError)
  })

  it('loads 200 users over 24 months with 5000 deals', async () => {
    const { store, companyId } = await loaded(demoFixture({ users: 200, months: 24, deals: 5_000 }))
    expect(await store.users.count(companyId)).toBe(200)
    const [live] = await store.dataTables.list(companyId)
    const statements = await store.statements.page(companyId, 'live', ALL)
    expect(statements.length).toBeGreaterThan(190 * 24)
    expect(statements.map((statement) => statement.date).toSorted()[0]).toBe('2024-01-01')
    expectTotalsAreTheirLines(statements, await store.commissionLines.page(companyId, live.id, ALL))
  })
})

describe('the demo over HTTP', () => {
  it('serves records of the documented shape and statements dated on the first day of their period', async () => {
    const server = await startTestServer({}, {}, { transport: 'inject' })
    try {
      const { apiKey } = await server.load(demoFixture({ users: 6, months: 3, deals: 5 }))
      const records = await server.call('/v1/tables/deals/records?limit=5', { key: apiKey })
      expect(records.status).toBe(200)
      expect(records.body.data).toHaveLength(5)
      for (const record of records.body.data) {
        expect(Object.keys(record)).toEqual(['id', 'name', 'owner_id', 'close_date', 'product', 'amount', 'amount_currency', 'deal_types'])
        expect(record).toMatchObject({ id: expect.stringMatching(/^D-\d{5}$/), name: expect.any(String), amount: expect.any(Number) })
        expect(record.close_date).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
      }
      const discovery = await server.call('/v2/data-structures', { key: apiKey })
      const statementsUrl = new URL(
        discovery.body.data.find((entry: { type: string }) => entry.type === 'statement_reporting').links.records,
      )
      const statements = await server.call(statementsUrl.pathname, { key: apiKey })
      expect(statements.body.data.length).toBeGreaterThan(0)
      for (const row of statements.body.data) expect(row['standard.date']).toMatch(/^\d{4}-\d{2}-01$/)
      const v1 = await server.call('/v1/reporting', { key: apiKey })
      for (const row of v1.body.data) expect(row.date).toMatch(/^\d{4}-\d{2}-01$/)
      const recordsUrl = new URL(discovery.body.data.find((entry: { type: string }) => entry.type === 'record_reporting').links.records)
      const [line] = (await server.call(recordsUrl.pathname, { key: apiKey })).body.data
      expect(line).toMatchObject({ 'datatable.name': expect.any(String), 'datatable.owner_id': expect.any(String) })
    } finally {
      await server.close()
    }
  })
})

describe('the demo company of a first start', () => {
  it('is loaded into an empty store only: one another process filled meanwhile gets nothing, its secret taken or not', async () => {
    const store = openSqliteStore(':memory:')
    try {
      const fixture = { ...demoFixture(), api_keys: [{ user: 'admin@demo.example', secret: 'cak_the-demo-secret-of-both-processes' }] }
      expect(await loadFixtureIntoEmptyStore(store, new ManualClock(), fixture)).not.toBeNull()
      expect(await loadFixtureIntoEmptyStore(store, new ManualClock(), fixture)).toBeNull()
      expect(await loadFixtureIntoEmptyStore(store, new ManualClock(), demoFixture())).toBeNull()
      expect(await store.companies.list()).toHaveLength(1)
    } finally {
      await store.close()
    }
  })

  it.each([
    ['a key of its own', null],
    ['DEMO_API_KEY, the same secret in both (as --test-mode gives)', 'cak_the-demo-secret-of-both-processes'],
  ])('is created once when two processes start together on one empty store, with %s', async (_case, secret) => {
    const dataDir = tempDataDir()
    const file = join(dataDir, 'commission-api.sqlite')
    const [first, second] = [openSqliteStore(file), openSqliteStore(file)]
    try {
      const clock = new ManualClock()
      const outcomes = await Promise.all([
        ensureDemoCompany(first, clock, dataDir, secret),
        ensureDemoCompany(second, clock, dataDir, secret),
      ])
      expect(outcomes.map((outcome) => outcome.kind).toSorted()).toEqual(['created', 'existing'])
      expect(await first.companies.list()).toHaveLength(1)
      const created = outcomes.find((outcome) => outcome.kind === 'created')!
      expect(readFileSync(demoKeyFile(dataDir), 'utf8').trim()).toBe('apiKey' in created ? created.apiKey : '')
    } finally {
      await first.close()
      await second.close()
    }
  })

  it('leaves its key in the key file, readable by its owner only, and no pending file beside it', async () => {
    const dataDir = tempDataDir()
    const store = openSqliteStore(join(dataDir, 'commission-api.sqlite'))
    try {
      // What a start that failed before its commit left: a key in no store.
      writeFileSync(`${demoKeyFile(dataDir)}.pending-4241-abcdefgh`, 'cak_a-key-that-was-never-committed-0000\n', { mode: 0o600 })
      const outcome = await ensureDemoCompany(store, new ManualClock(), dataDir)
      expect(outcome.kind).toBe('created')
      expect(readFileSync(demoKeyFile(dataDir), 'utf8')).toBe(`${'apiKey' in outcome ? outcome.apiKey : ''}\n`)
      expect(statSync(demoKeyFile(dataDir)).mode & 0o777).toBe(0o600)
      expect(readdirSync(dataDir).filter((name) => name.startsWith('demo-api-key.'))).toEqual([])
    } finally {
      await store.close()
    }
  })

  it('gets its key file at the next start when a crash came between the commit and the key file', async () => {
    const dataDir = tempDataDir()
    const store = openSqliteStore(join(dataDir, 'commission-api.sqlite'))
    try {
      // What the start cut short left: the company committed with the key of its pending file, and no key file.
      const secret = 'cak_the-key-of-a-start-cut-short-000000'
      writeFileSync(`${demoKeyFile(dataDir)}.pending-4242-abcdefgh`, `${secret}\n`, { mode: 0o600 })
      writeFileSync(`${demoKeyFile(dataDir)}.pending-4243-abcdefgh`, 'cak_a-key-that-was-never-committed-0000\n', { mode: 0o600 })
      const fixture = { ...demoFixture(), api_keys: [{ user: 'admin@demo.example', secret }] }
      expect(await loadFixtureIntoEmptyStore(store, new ManualClock(), fixture)).not.toBeNull()

      const outcome = await ensureDemoCompany(store, new ManualClock(), dataDir)
      expect(outcome).toEqual({ kind: 'existing', keyFile: demoKeyFile(dataDir) })
      expect(readFileSync(demoKeyFile(dataDir), 'utf8').trim()).toBe(secret)
      expect(readdirSync(dataDir).filter((name) => name.startsWith('demo-api-key.'))).toEqual([])
    } finally {
      await store.close()
    }
  })

  it('keeps the pending key of a load that failed after its commit (its statements rendered after), for the next start', async () => {
    const dataDir = tempDataDir()
    const store = openSqliteStore(join(dataDir, 'commission-api.sqlite'))
    try {
      // The load's own transaction renders the statements its plans write; what fails is the look for any left to render after it.
      const failingAfterTheCommit: Store = {
        ...store,
        statements: { ...store.statements, pageToRender: () => Promise.reject(new Error('a fault of ours while rendering')) },
      }
      await expect(ensureDemoCompany(failingAfterTheCommit, new ManualClock(), dataDir)).rejects.toThrow('a fault of ours while rendering')
      expect(await store.companies.list()).toHaveLength(1)

      expect(await ensureDemoCompany(store, new ManualClock(), dataDir)).toEqual({ kind: 'existing', keyFile: demoKeyFile(dataDir) })
      const secret = readFileSync(demoKeyFile(dataDir), 'utf8').trim()
      expect(await store.apiKeys.findByHash(hashApiKey(secret))).not.toBeNull()
    } finally {
      await store.close()
    }
  })

  it('creates the demo company, key file included, when its statements cannot be rendered ahead for a busy or full store', async () => {
    const dataDir = tempDataDir()
    const store = openSqliteStore(join(dataDir, 'commission-api.sqlite'))
    try {
      const busyAfterTheCommit: Store = {
        ...store,
        statements: { ...store.statements, pageToRender: () => Promise.reject(new StoreBusyError('another writer held the lock')) },
      }
      const created = await ensureDemoCompany(busyAfterTheCommit, new ManualClock(), dataDir)
      expect(created.kind).toBe('created')
      const secret = readFileSync(demoKeyFile(dataDir), 'utf8').trim()
      expect(await store.apiKeys.findByHash(hashApiKey(secret))).not.toBeNull()
    } finally {
      await store.close()
    }
  })

  it('points at no key file whose key the store no longer knows (revoked), and names it stale', async () => {
    const dataDir = tempDataDir()
    const store = openSqliteStore(join(dataDir, 'commission-api.sqlite'))
    try {
      const created = await ensureDemoCompany(store, new ManualClock(), dataDir)
      const [key] = await store.apiKeys.list('companyId' in created ? created.companyId : '')
      expect(await store.apiKeys.delete(key.company_id, key.id)).toBe(true)
      expect(await ensureDemoCompany(store, new ManualClock(), dataDir)).toEqual({
        kind: 'existing',
        keyFile: null,
        staleKeyFile: demoKeyFile(dataDir),
      })
    } finally {
      await store.close()
    }
  })

  it('removes a pending key the store does not know, leaving the key file as it is', async () => {
    const dataDir = tempDataDir()
    const store = openSqliteStore(join(dataDir, 'commission-api.sqlite'))
    try {
      const created = await ensureDemoCompany(store, new ManualClock(), dataDir)
      writeFileSync(`${demoKeyFile(dataDir)}.pending-4244-abcdefgh`, 'cak_a-key-that-was-never-committed-0000\n', { mode: 0o600 })

      expect(await ensureDemoCompany(store, new ManualClock(), dataDir)).toEqual({ kind: 'existing', keyFile: demoKeyFile(dataDir) })
      expect(readFileSync(demoKeyFile(dataDir), 'utf8').trim()).toBe('apiKey' in created ? created.apiKey : '')
      expect(existsSync(`${demoKeyFile(dataDir)}.pending-4244-abcdefgh`)).toBe(false)
    } finally {
      await store.close()
    }
  })
})
