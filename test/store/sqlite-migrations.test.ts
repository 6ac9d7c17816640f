import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, expect, it } from 'vitest'
import { deletePlan } from '../../src/admin/plans.ts'
import { MIGRATIONS } from '../../src/store/sqlite/migrations.ts'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts'
import { newId } from '../../src/ids.ts'
import type { DataImport } from '../../src/store/model.ts'
import { aCommissionLine, aCompany, anImport, aStatement, aUser, byId } from './builders.ts'
import { temporaryDirectory } from '../helpers/temporary-directories.ts'

/**
 * A store made by the migrations before migration 12 (which runs at once the record imports a version before stacked
 * imports left waiting), holding the imports `waiting`; with `windowsMigrationRan`, its schema says migration 12 ran.
 */
function storeWithWaitingImports(path: string, waiting: readonly DataImport[], { windowsMigrationRan }: { windowsMigrationRan: boolean }) {
  const old = new DatabaseSync(path)
  const windowsMigration = MIGRATIONS.findIndex((migration) => migration.includes("join_key LIKE 'records:%'"))
  for (const migration of MIGRATIONS.slice(0, windowsMigration)) old.exec(migration)
  old.exec(`PRAGMA user_version = ${windowsMigration + (windowsMigrationRan ? 1 : 0)}`)
  for (const legacy of waiting) {
    old
      .prepare('INSERT INTO imports (id, company_id, join_key, status, window_ends_at, doc) VALUES (?, ?, ?, ?, ?, ?)')
      .run(legacy.id, legacy.company_id, legacy.join_key, legacy.status, legacy.window_ends_at, JSON.stringify(legacy))
  }
  old.close()
}

/** The payload of a call of one record to the table `tableId`, received at `now`. */
const dealsCall = (companyId: string, tableId: string, now: string) => ({
  id: newId(),
  company_id: companyId,
  table_id: tableId,
  items: [{ id: 'D-1' }],
  options: { all: false, keep_overrides: false },
  received_at: now,
  bytes: 10,
})

describe('SQLite migrations', () => {
  it('move statements stored as documents into columns, unchanged', async () => {
    const path = join(temporaryDirectory('migrate-'), 'db.sqlite')
    const company = aCompany()
    const user = aUser(company.id)
    const withFigures = aStatement(company.id, {
      user_id: user.id,
      payment: 1200.5,
      target: null,
      metrics: { attainment: 0.85, bonus: { value: 10, currency: 'EUR' } },
      dimensions: { region: ['EMEA', 'APAC'] },
    })
    const sandbox = aStatement(company.id, { user_id: user.id, environment: 'sandbox', payment: null })

    // A database as the release before the statement columns left it.
    const columnsMigration = MIGRATIONS.findIndex((migration) => migration.includes('statements_by_column'))
    const old = new DatabaseSync(path)
    for (const migration of MIGRATIONS.slice(0, columnsMigration)) old.exec(migration)
    old.exec(`PRAGMA user_version = ${columnsMigration}`)
    const insert = old.prepare('INSERT INTO statements (company_id, environment, id, modified_at, doc) VALUES (?, ?, ?, ?, ?)')
    for (const statement of [withFigures, sandbox]) {
      insert.run(statement.company_id, statement.environment, statement.id, statement.modified_at, JSON.stringify(statement))
    }
    old.close()

    const store = openSqliteStore(path)
    try {
      expect(await store.statements.page(company.id, 'live', { limit: 10 })).toStrictEqual([withFigures])
      expect(await store.statements.page(company.id, 'sandbox', { limit: 10 })).toStrictEqual([sandbox])
    } finally {
      await store.close()
    }
  })

  it('move commission lines stored as documents into columns, unchanged and still found by cell', async () => {
    const path = join(temporaryDirectory('migrate-'), 'db.sqlite')
    const companyId = aCompany().id
    const tableId = newId()
    const planId = newId()
    const loaded = aCommissionLine(companyId, tableId, { metrics: {} })
    const calculated = aCommissionLine(companyId, tableId, {
      commission: 120,
      metrics: { bonus: { value: 7.25, currency: 'EUR' } },
      record_values: { deal_id: 'D-7', amount: { value: 2400, currency: 'USD' }, deal_types: ['new', 'upsell'] },
      plan_id: planId,
      period: '2024-01',
    })

    // A database as the release before the line columns left it.
    const columnsMigration = MIGRATIONS.findIndex((migration) => migration.includes('commission_lines_by_column'))
    const old = new DatabaseSync(path)
    for (const migration of MIGRATIONS.slice(0, columnsMigration)) old.exec(migration)
    old.exec(`PRAGMA user_version = ${columnsMigration}`)
    const insert = old.prepare(
      `INSERT INTO commission_lines (company_id, table_id, id, modified_at, plan_id, user_id, period, record_id, doc)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    for (const line of [loaded, calculated]) {
      insert.run(
        line.company_id,
        line.table_id,
        line.id,
        line.modified_at,
        line.plan_id,
        line.user_id,
        line.period,
        line.record_id,
        JSON.stringify(line),
      )
    }
    old.close()

    const store = openSqliteStore(path)
    try {
      const inIdOrder = [loaded, calculated].toSorted((a, b) => (a.id < b.id ? -1 : 1))
      expect(await store.commissionLines.page(companyId, tableId, { limit: 10 })).toStrictEqual(inIdOrder)
      const cell = { user_id: calculated.user_id, period: '2024-01' }
      expect(await store.commissionLines.findOfPlan(companyId, planId, { cells: [cell] })).toStrictEqual([calculated])
      const [figures] = await store.commissionLines.figuresOfPlan(companyId, planId, [cell], { amount: 'amount', externalId: 'deal_id' })
      expect(figures).toMatchObject({ id: calculated.id, commission: 120, amount: { value: 2400, currency: 'USD' }, external_id: 'D-7' })
    } finally {
      await store.close()
    }
  })

  it('count the payloads of the imports not finished at the upgrade against their queue, as stored', async () => {
    const path = join(temporaryDirectory('migrate-'), 'db.sqlite')
    const companyId = aCompany().id
    const usersImport = (id: string, status: string) => ({
      id,
      company_id: companyId,
      target: 'users',
      table_id: null,
      data_table_key: 'users',
      join_key: 'users',
      status,
      window_ends_at: '2026-06-01T00:00:00.000Z',
      created_at: '2026-06-01T00:00:00.000Z',
      launched_at: null,
      finished_at: null,
      error: false,
      details: [],
      lease_owner: null,
      lease_expires_at: null,
      attempts: 0,
    })
    const [waiting, done] = [usersImport(newId(), 'scheduled'), usersImport(newId(), 'finished')]
    const payloadOf = (importId: string) =>
      JSON.stringify({ id: newId(), company_id: companyId, import_id: importId, items: [{ email: 'é@example.com' }] })

    // A database as the release before the queue bound left it.
    const queueMigration = MIGRATIONS.findIndex((migration) => migration.includes('payload_bytes'))
    const old = new DatabaseSync(path)
    for (const migration of MIGRATIONS.slice(0, queueMigration)) old.exec(migration)
    old.exec(`PRAGMA user_version = ${queueMigration}`)
    const payloads = [payloadOf(waiting.id), payloadOf(waiting.id), payloadOf(done.id)]
    for (const record of [waiting, done]) {
      old
        .prepare(`INSERT INTO imports (id, company_id, join_key, status, window_ends_at, doc) VALUES (?, ?, 'users', ?, ?, ?)`)
        .run(record.id, companyId, record.status, record.window_ends_at, JSON.stringify(record))
    }
    for (const payload of payloads) {
      const { id, import_id } = JSON.parse(payload)
      old.prepare('INSERT INTO import_payloads (company_id, import_id, id, doc) VALUES (?, ?, ?, ?)').run(companyId, import_id, id, payload)
    }
    old.close()

    const store = openSqliteStore(path)
    try {
      const waitingBytes = Buffer.byteLength(payloads[0]) + Buffer.byteLength(payloads[1])
      expect(await store.imports.queuedBytes(companyId)).toBe(waitingBytes)
      expect((await store.imports.get(companyId, waiting.id))?.payload_bytes).toBe(waitingBytes)
      expect((await store.imports.get(companyId, done.id))?.payload_bytes).toBe(0)
      // The payloads of an import finished before the upgrade go; those of an import still to run stay.
      expect(await store.imports.payloads(companyId, done.id)).toEqual([])
      expect(await store.imports.payloads(companyId, waiting.id)).toHaveLength(2)
      // A payload's place in its import is its id's order among the import's payloads stored before.
      const reader = new DatabaseSync(path)
      const positions = reader.prepare('SELECT position FROM import_payloads WHERE import_id = ? ORDER BY id').all(waiting.id)
      reader.close()
      expect(positions.map((row) => row.position)).toEqual([0, 1])
    } finally {
      await store.close()
    }
  })

  it('run at once the record imports a version before stacked imports left waiting, before any call made after', async () => {
    const path = join(temporaryDirectory('migrate-'), 'db.sqlite')
    const companyId = aCompany().id
    const [leads, deals] = [newId(), newId()]
    const recordImport = (tableId: string | null, createdAt: string): DataImport => ({
      ...anImport(companyId, createdAt, 5, tableId ? `records:${tableId}` : 'records'),
      target: 'records',
      table_id: tableId,
      data_table_key: 'deals',
    })
    // Two tables' imports waiting in their windows, the leads' older: a call to deals must not run before either.
    const waiting = [recordImport(leads, '2026-06-01T00:00:00.000Z'), recordImport(deals, '2026-06-01T00:00:30.000Z')]
    storeWithWaitingImports(path, waiting, { windowsMigrationRan: false })

    const store = openSqliteStore(path)
    try {
      for (const legacy of waiting) {
        expect((await store.imports.get(companyId, legacy.id))?.window_ends_at).toBe(legacy.created_at)
      }
      const now = '2026-06-01T00:01:00.000Z'
      const payload = dealsCall(companyId, deals, now)
      const joined = await store.imports.enqueue(recordImport(null, now), payload, now)
      expect(waiting.map((legacy) => legacy.id)).not.toContain(joined.id)
      expect(joined.id > waiting[1].id).toBe(true)
      expect((await store.imports.claimNext('w', now, '2026-06-01T00:02:00.000Z'))?.id).toBe(waiting[0].id)
    } finally {
      await store.close()
    }
  })

  it('run at once the record imports that migration 12 as eb2e744 shipped it joined by records', async () => {
    const path = join(temporaryDirectory('migrate-'), 'db.sqlite')
    const companyId = aCompany().id
    const [leads, deals] = [newId(), newId()]
    // As eb2e744 left them: each keeps its table, and is joined by records.
    const createdAt = ['2026-06-01T00:00:00.000Z', '2026-06-01T00:00:30.000Z']
    const waiting = [leads, deals].map((tableId, index): DataImport => ({
      ...anImport(companyId, createdAt[index], 5, 'records'),
      target: 'records',
      table_id: tableId,
      data_table_key: 'deals',
    }))
    // Migration 12 ran as eb2e744 shipped it: the store says so, and the imports are as the migrations before left them.
    storeWithWaitingImports(path, waiting, { windowsMigrationRan: true })

    const store = openSqliteStore(path)
    try {
      for (const legacy of waiting) {
        expect((await store.imports.get(companyId, legacy.id))?.window_ends_at).toBe(legacy.created_at)
      }
      const now = '2026-06-01T00:01:00.000Z'
      const payload = dealsCall(companyId, deals, now)
      const call: DataImport = { ...anImport(companyId, now, 5, 'records'), target: 'records', table_id: null, data_table_key: 'records' }
      const joined = await store.imports.enqueue(call, payload, now)
      expect(waiting.map((legacy) => legacy.id)).not.toContain(joined.id)
      expect(joined.id > waiting[1].id).toBe(true)
    } finally {
      await store.close()
    }
  })

  it("drop the lines a plan kept of the table it left, but a frozen cell's, and the sums of their pending cells", async () => {
    const path = join(temporaryDirectory('migrate-'), 'db.sqlite')
    const companyId = aCompany().id
    const [left, reads, planId, userId] = [newId(), newId(), newId(), newId()]
    const sums = { achievement: 1000, payment: 50, bonus: 0 }
    const ofPlan = { plan_id: planId, user_id: userId }
    const pending = aStatement(companyId, { ...ofPlan, period: '2026-05', status: 'pending', sums })
    const paid = aStatement(companyId, { ...ofPlan, period: '2026-04', status: 'paid', sums })
    const stale = aCommissionLine(companyId, left, { ...ofPlan, period: '2026-05' })
    const current = aCommissionLine(companyId, reads, { ...ofPlan, period: '2026-05' })
    const frozen = aCommissionLine(companyId, left, { ...ofPlan, period: '2026-04' })

    // The data as a version before the migration left it: the plan reads another table than its lines' first one.
    const migration = MIGRATIONS.findIndex((text) => text.includes("line.table_id <> plans.doc ->> '$.table_id'"))
    const before = openSqliteStore(path)
    await before.statements.save([pending, paid])
    await before.commissionLines.save([stale, current, frozen])
    await before.close()
    const old = new DatabaseSync(path)
    old
      .prepare('INSERT INTO plans (company_id, id, environment, name, doc) VALUES (?, ?, ?, ?, ?)')
      .run(companyId, planId, 'live', 'Sales', JSON.stringify({ id: planId, company_id: companyId, table_id: reads }))
    old.exec(`PRAGMA user_version = ${migration}`)
    old.close()

    const store = openSqliteStore(path)
    try {
      expect(await store.commissionLines.page(companyId, left, { limit: 10 })).toStrictEqual([frozen])
      expect(await store.commissionLines.page(companyId, reads, { limit: 10 })).toStrictEqual([current])
      const statements = await store.statements.findOfPlan(companyId, planId)
      expect(statements.find((statement) => statement.id === pending.id)?.sums).toBeUndefined()
      expect(statements.find((statement) => statement.id === paid.id)?.sums).toStrictEqual(sums)
      // Its statements may have counted those lines: the company is due a full recalculation (run at the next start).
      expect(await store.companies.recalculationsDue()).toEqual([{ company_id: companyId, reason: expect.any(String) }])
    } finally {
      await store.close()
    }
  })

  it('drop the copy a plan moved to the other environment left of its pending statements in the one it left', async () => {
    const path = join(temporaryDirectory('migrate-'), 'db.sqlite')
    const companyId = aCompany().id
    const [planId, userId] = [newId(), newId()]
    const ofPlan = { plan_id: planId, user_id: userId }
    const moved = aStatement(companyId, { ...ofPlan, period: '2026-05', status: 'pending' })
    const left = { ...moved, environment: 'sandbox' as const, payment: 7 }
    const paid = aStatement(companyId, { ...ofPlan, period: '2026-04', status: 'paid' })
    const paidLeft = { ...paid, environment: 'sandbox' as const }
    const loaded = aStatement(companyId, { environment: 'sandbox' })

    // The plan, now live, was in the sandbox: its statements were saved in live beside the rows they had there.
    const migration = MIGRATIONS.findIndex((text) => text.includes('moved.environment <> statements.environment'))
    const before = openSqliteStore(path)
    await before.statements.insertMany([moved, left, paid, paidLeft, loaded])
    await before.close()
    const old = new DatabaseSync(path)
    old
      .prepare('INSERT INTO plans (company_id, id, environment, name, doc) VALUES (?, ?, ?, ?, ?)')
      .run(companyId, planId, 'live', 'Sales', JSON.stringify({ id: planId, company_id: companyId, environment: 'live' }))
    old.exec(`PRAGMA user_version = ${migration}`)
    old.close()

    const store = openSqliteStore(path)
    try {
      expect(await store.statements.page(companyId, 'live', { limit: 10 })).toStrictEqual(byId([moved, paid]))
      // A validated or paid one is left as it is: no calculation touches its cell, and no one decides here which is paid.
      expect(await store.statements.page(companyId, 'sandbox', { limit: 10 })).toStrictEqual(byId([paidLeft, loaded]))
    } finally {
      await store.close()
    }
  })

  it('drop the pending copy of a statement whose copy in the other environment is validated or paid, which deleting or saving it took', async () => {
    const path = join(temporaryDirectory('migrate-'), 'db.sqlite')
    const company = aCompany()
    const [planId, userId] = [newId(), newId()]
    const ofPlan = { plan_id: planId, user_id: userId }
    // The plan, now in the sandbox, was live: its statements were saved there beside the rows they had in live, and an
    // admin edit by id reached the live row (read first) alone: April's is paid, its copy pending. March's are both frozen.
    const paid = aStatement(company.id, { ...ofPlan, period: '2026-04', status: 'paid' })
    const pendingCopy = { ...paid, environment: 'sandbox' as const, status: 'pending' as const, payment: 7 }
    const validated = aStatement(company.id, { ...ofPlan, period: '2026-03', status: 'validated' })
    const paidCopy = { ...validated, environment: 'sandbox' as const, status: 'paid' as const }
    const may = aStatement(company.id, { ...ofPlan, period: '2026-05', status: 'pending', environment: 'sandbox' })

    // Migration 20 left them: the pending copy is in the plan's environment.
    const migration = MIGRATIONS.findIndex((text) => text.includes('FROM statements AS frozen'))
    const before = openSqliteStore(path)
    await before.companies.insert(company)
    await before.statements.insertMany([paid, pendingCopy, validated, paidCopy, may])
    await before.close()
    const old = new DatabaseSync(path)
    old
      .prepare('INSERT INTO plans (company_id, id, environment, name, doc) VALUES (?, ?, ?, ?, ?)')
      .run(company.id, planId, 'sandbox', 'Sales', JSON.stringify({ id: planId, company_id: company.id, environment: 'sandbox' }))
    old.exec(`PRAGMA user_version = ${migration}`)
    old.close()

    const store = openSqliteStore(path)
    try {
      expect(await store.statements.page(company.id, 'live', { limit: 10 })).toStrictEqual(byId([paid, validated]))
      // Two frozen copies stay: which one the cell states is not the upgrade's to decide.
      expect(await store.statements.page(company.id, 'sandbox', { limit: 10 })).toStrictEqual(byId([paidCopy, may]))
      // The plan's deletion deletes its pending statements by id: April's pending copy took the paid one with it.
      await deletePlan(store, company.id, planId)
      expect(await store.statements.page(company.id, 'live', { limit: 10 })).toStrictEqual(byId([paid, validated]))
      expect(await store.statements.page(company.id, 'sandbox', { limit: 10 })).toStrictEqual([paidCopy])
    } finally {
      await store.close()
    }
  })

  it('give a store migrated by a version whose migration 13 made no table of recalculations due that table, and list what it left', async () => {
    const path = join(temporaryDirectory('migrate-'), 'db.sqlite')
    const [company, calculated] = [aCompany(), aCompany()]
    const ofPlan = { plan_id: newId(), user_id: newId(), period: '2026-05', status: 'pending' as const }
    const before = openSqliteStore(path)
    await before.companies.insert(company)
    await before.companies.insert(calculated)
    // The cell whose sums that migration dropped (its statement may count lines it deleted), and one calculated since.
    await before.statements.save([
      aStatement(company.id, ofPlan),
      aStatement(calculated.id, { ...ofPlan, sums: { achievement: 0, payment: 0, bonus: 0 } }),
    ])
    await before.close()
    // As c238b78 to 7ff1009 left it: migration 13 ran, without the table.
    const migration = MIGRATIONS.findIndex((text) => text.includes("line.table_id <> plans.doc ->> '$.table_id'"))
    const old = new DatabaseSync(path)
    old.exec('DROP TABLE recalculations_due')
    old.exec(`PRAGMA user_version = ${migration + 1}`)
    old.close()

    const store = openSqliteStore(path)
    try {
      expect(await store.companies.recalculationsDue()).toStrictEqual([{ company_id: company.id, reason: expect.any(String) }])
      expect(await store.companies.delete(company.id)).toBe(true)
    } finally {
      await store.close()
    }
  })
})
