import { Writable } from 'node:stream'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, expect, it } from 'vitest'
import { recalculateDueCompanies } from '../src/admin/plans.ts'
import { ManualClock } from '../src/clock.ts'
import { loadConfig } from '../src/config.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import type { Fixture } from '../src/fixtures/schema.ts'
import { startServer } from '../src/server.ts'
import { renderStatements } from '../src/v2/statement-texts.ts'
import { MIGRATIONS } from '../src/store/sqlite/migrations.ts'
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import { tempDataDir } from './helpers/process.ts'
import { aCommissionLine } from './store/builders.ts'
import { smallFixture } from './helpers/fixtures.ts'

/**
 * What an earlier version left wrong, put right by the upgrade: a plan moved to another data table kept its lines of
 * the table it left (before 5e0c9ae), and a recalculation of their cell then counted them in its statement.
 */

const fields = [
  { api_key: 'id', name: 'Id', type: 'string' },
  { api_key: 'owner_id', name: 'Owner', type: 'string' },
  { api_key: 'close_date', name: 'Close date', type: 'datetime' },
  { api_key: 'amount', name: 'Amount', type: 'amount' },
]

const record = (id: string, amount: number) => ({
  id,
  owner_id: 'rep@moved.example',
  close_date: '2026-05-10T10:00:00Z',
  amount,
  amount_currency: 'EUR',
})

function company(): Fixture {
  return {
    company: { name: 'Moved', default_currency: 'EUR' },
    users: [{ email: 'rep@moved.example', currency: 'EUR' }],
    data_tables: [
      { key: 'deals', name: 'Deals', id_field: 'id', name_field: 'id', fields, records: [record('D-1', 6000)] },
      { key: 'renewals', name: 'Renewals', id_field: 'id', name_field: 'id', fields, records: [record('R-1', 1200)] },
    ],
    plans: [
      {
        name: 'Sales',
        data_table: 'renewals',
        user_field: 'owner_id',
        date_field: 'close_date',
        amount_field: 'amount',
        frequency: 'monthly',
        rate: 0.05,
      },
    ],
  } as Fixture
}

/** A store as an earlier version left it (a line of the table the plan left, counted in its cell), migrated again. */
async function storeLeftByAnEarlierVersion() {
  const dataDir = tempDataDir()
  const file = join(dataDir, 'commission-api.sqlite')
  const store = openSqliteStore(file)
  const { company_id: companyId } = await loadFixture(store, new ManualClock('2026-06-01T00:00:00.000Z'), company())
  const [plan] = await store.plans.list(companyId)
  const deals = (await store.dataTables.getByKey(companyId, 'live', 'deals'))!
  const [statement] = await store.statements.findOfPlan(companyId, plan.id)
  expect(statement.payment).toBe(60)
  const stale = aCommissionLine(companyId, deals.id, {
    plan_id: plan.id,
    user_id: statement.user_id,
    period: statement.period,
    commission: 300,
  })
  await store.commissionLines.save([stale])
  await store.statements.save([{ ...statement, payment: 360 }])
  await store.close()
  const old = new DatabaseSync(file)
  old.exec(`PRAGMA user_version = ${MIGRATIONS.findIndex((text) => text.includes('recalculations_due'))}`)
  old.close()
  return { dataDir, file, companyId, planId: plan.id, dealsId: deals.id }
}

/** Runs `work` while another connection holds the store's write lock, as another process's long write does. */
async function whileLocked<T>(file: string, work: () => Promise<T>): Promise<T> {
  const writer = new DatabaseSync(file)
  writer.exec('BEGIN IMMEDIATE')
  try {
    return await work()
  } finally {
    writer.exec('ROLLBACK')
    writer.close()
  }
}

/** A server of role api on the store in `dataDir`, what it logs kept as text. */
async function startLogged(dataDir: string) {
  const log = { text: '' }
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      log.text += chunk.toString()
      done()
    },
  })
  const config = loadConfig({ DATA_DIR: dataDir, PORT: '0', DEMO: 'off', LOG_LEVEL: 'info', IMPORT_WORKER: 'inline' })
  return { server: await startServer(config, { role: 'api', out: null, logStream }), log }
}

describe('the upgrade over a plan that kept the lines of the table it left (SQLite)', () => {
  it('removes those lines and recalculates the company at the next start, its statements as a fresh calculation states them', async () => {
    const { dataDir, companyId, planId, dealsId } = await storeLeftByAnEarlierVersion()
    const { server, log } = await startLogged(dataDir)
    try {
      const [after] = await server.store.statements.findOfPlan(companyId, planId)
      expect(after.payment).toBe(60)
      expect(await server.store.commissionLines.page(companyId, dealsId, { limit: 10 })).toEqual([])
      expect(await server.store.companies.recalculationsDue()).toEqual([])
      expect(log.text).toContain('company recalculated after the upgrade')
    } finally {
      await server.close()
    }
  })

  it('recalculates a company once when two processes start together on the store', async () => {
    const { file, companyId, planId } = await storeLeftByAnEarlierVersion()
    const stores = [openSqliteStore(file), openSqliteStore(file)]
    try {
      const outcomes = await Promise.all(stores.map((store) => recalculateDueCompanies(store, new ManualClock('2026-06-02T00:00:00.000Z'))))
      expect(outcomes.flat()).toEqual([{ company_id: companyId, reason: expect.any(String), calculation: expect.anything() }])
      expect((await stores[0].statements.findOfPlan(companyId, planId))[0].payment).toBe(60)
    } finally {
      for (const store of stores) await store.close()
    }
  })
})

describe('statement rows an earlier version rendered', () => {
  it('are left to the next start when the store is busy, without each company waiting for its lock in turn', async () => {
    const dataDir = tempDataDir()
    const file = join(dataDir, 'commission-api.sqlite')
    const store = openSqliteStore(file)
    const companies: string[] = []
    for (const name of ['One', 'Two']) {
      const { company_id: companyId } = await loadFixture(store, new ManualClock('2026-06-01T00:00:00.000Z'), smallFixture(name))
      const live = await store.statements.pageToRender(companyId, 'live', 'stale', null, 1000)
      await store.statements.saveRenderings(
        companyId,
        'live',
        live.map((statement) => ({ id: statement.id, key: 'stale', text: '{}' })),
      )
      companies.push(companyId)
    }
    await store.close()
    const { server, log } = await whileLocked(file, () => startLogged(dataDir))
    await server.close()
    const lines: { msg?: string; company_ids?: string[] }[] = log.text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line))
    const warnings = lines.filter((line) => line.msg?.startsWith('statement rows could not be rendered again'))
    expect(warnings).toEqual([expect.objectContaining({ company_ids: expect.arrayContaining(companies) })])
  }, 30_000)

  it('are looked for without the write lock: a start where nothing is stale does not wait behind a long write', async () => {
    const dataDir = tempDataDir()
    const file = join(dataDir, 'commission-api.sqlite')
    const store = openSqliteStore(file)
    await loadFixture(store, new ManualClock('2026-06-01T00:00:00.000Z'), smallFixture())
    await store.close()
    const { server, log } = await whileLocked(file, () => startLogged(dataDir))
    await server.close()
    expect(log.text).not.toContain('could not be rendered again')
  })

  it('are rendered again by the first start of this version, which pages then read rather than render as they go', async () => {
    const dataDir = tempDataDir()
    const store = openSqliteStore(join(dataDir, 'commission-api.sqlite'))
    const { company_id: companyId } = await loadFixture(store, new ManualClock('2026-06-01T00:00:00.000Z'), smallFixture())
    // Every live statement as an earlier version left it: a rendering under a key this version never makes.
    const older = 'rendered-by-an-earlier-version'
    const live = await store.statements.pageToRender(companyId, 'live', older, null, 1000)
    expect(live.length).toBeGreaterThan(0)
    await store.statements.saveRenderings(
      companyId,
      'live',
      live.map((statement) => ({ id: statement.id, key: older, text: '{}' })),
    )
    expect(await store.statements.pageToRender(companyId, 'live', older, null, 1000)).toEqual([])
    await store.close()

    const { server, log } = await startLogged(dataDir)
    try {
      expect(await server.store.statements.pageToRender(companyId, 'live', older, null, 1000)).toHaveLength(live.length)
      // Under the key of this version: nothing is left to render.
      expect(await renderStatements(server.store, companyId)).toBe(0)
      expect(log.text).toContain(`"statements":${live.length},"msg":"statement rows rendered ahead of reads again"`)
    } finally {
      await server.close()
    }
  })
})
