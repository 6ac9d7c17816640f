/**
 * The calculation benchmark (`npm run bench:calc`), on the embedded store in a temporary directory:
 *
 * 1. A full recalculation of a company with BENCH_DEALS deals (default 200,000), 100 users and 12 months under a
 *    monthly plan with a quota and two tiers: deals per second through the pure engine (`calculatePlan`, the
 *    records already in memory), and through `recalculate` with the store (reading records, users and targets,
 *    writing every line and statement) on the first calculation, and again when nothing changed; and the longest
 *    the event loop went without a turn during each (what a request to the thread doing it would wait).
 * 2. A BENCH_IMPORT-deal import (default 5,000, in one month, over every user; another month each round) run by the import engine into
 *    two copies of a company, one without plans: the extra time the recalculation takes, as a ratio to the apply
 *    time without plans; into a company without deals, then into one of BENCH_DEALS deals. Each import is run
 *    BENCH_ROUNDS times (default 3, medians printed).
 *
 * 3. What writing the first calculation's lines costs the store alone: the same lines, in the same order, saved
 *    through the store (`commissionLines.save`, one transaction) into a fresh file, and inserted straight into a
 *    fresh node:sqlite table of (id, JSON) in one transaction, as `bench:ingest`'s baseline does: the floor any
 *    design of the lines' table has on this machine.
 *
 * Targets (issue "Commission plans and the calculation engine"): ≥ 500,000 deals/s pure, ≥ 100,000 deals/s with the
 * store, extra import time ≤ 1.5 × the apply time. Figures and method: docs/performance.md.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { setTimeout } from 'node:timers/promises'
import { DatabaseSync } from 'node:sqlite'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { calculatePlan, userDirectory } from '../src/calculation/engine.ts'
import { companySettings, recalculate, stampedBy } from '../src/calculation/recalculation.ts'
import { ManualClock, systemClock } from '../src/clock.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import { newId } from '../src/ids.ts'
import { enqueueImport } from '../src/imports/enqueue.ts'
import { runClaimedImport } from '../src/imports/run-import.ts'
import type { CommissionLine, DataTableRecord, Plan } from '../src/store/model.ts'
import type { Store } from '../src/store/port.ts'
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts'

const DEALS = Number(process.env.BENCH_DEALS ?? 200_000)
const IMPORTED = Number(process.env.BENCH_IMPORT ?? 5_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const USERS = 100
const MONTHS = 12

const median = (values: number[]) => values.toSorted((a, b) => a - b)[Math.floor(values.length / 2)]
const rate = (count: number, ms: number) => Math.round((count / ms) * 1000).toLocaleString('en')
const month = (index: number) => `2025-${String((index % MONTHS) + 1).padStart(2, '0')}`
const email = (index: number) => `rep${index % USERS}@bench.example`

function deal(index: number, closeMonth = month(index)): Record<string, unknown> {
  return {
    id: `D-${index}`,
    name: `Deal ${index}`,
    owner_id: email(Math.floor(index / MONTHS)),
    close_date: `${closeMonth}-${String((index % 28) + 1).padStart(2, '0')}T10:00:00Z`,
    amount: 500 + ((index * 7919) % 9_500),
    amount_currency: index % 5 ? 'EUR' : 'USD',
    deal_types: index % 3 ? 'new' : 'renewal',
  }
}

const PLAN = {
  name: 'Sales plan',
  data_table: 'deals',
  user_field: 'owner_id',
  date_field: 'close_date',
  amount_field: 'amount',
  frequency: 'monthly',
  rate: 0.05,
  quota: 'Monthly bookings',
  tiers: [
    { from: 0.8, rate: 0.06, name: 'silver' },
    { from: 1.1, rate: 0.09, name: 'gold' },
  ],
  metrics: { attainment: 'attainment', tier: 'tier', bonus: 'bonus' },
}

const field = (api_key: string, type: string) => ({ api_key, name: api_key, type })

/** A company of USERS users with a deals table of `deals` deals, with or without the plan. */
function companyFixture(deals: number, withPlan: boolean) {
  return {
    company: { name: `Calculation bench${withPlan ? '' : ' (no plan)'}`, default_currency: 'EUR', exchange_rates: { USD: 0.92 } },
    users: Array.from({ length: USERS }, (_, index) => ({ email: email(index), currency: index % 4 ? 'EUR' : 'USD' })),
    custom_metrics: [
      { api_key: 'attainment', name: 'Attainment', kind: 'percentage' },
      { api_key: 'tier', name: 'Tier', kind: 'enum', enum_values: ['silver', 'gold'] },
      { api_key: 'bonus', name: 'Bonus', kind: 'amount' },
    ],
    data_tables: [
      {
        key: 'deals',
        name: 'Deals',
        id_field: 'id',
        name_field: 'name',
        fields: [
          field('id', 'string'),
          field('name', 'string'),
          field('owner_id', 'string'),
          field('close_date', 'datetime'),
          field('amount', 'amount'),
          field('deal_types', 'multi'),
        ],
        records: Array.from({ length: deals }, (_, index) => deal(index)),
      },
    ],
    reporting_structures: [
      { name: 'Statements', type: 'statement_reporting', metrics: ['attainment', 'tier', 'bonus'] },
      { name: 'Deal commissions', type: 'record_reporting', data_table: 'deals', metrics: ['bonus'], fields: ['name', 'amount'] },
    ],
    quotas: [
      {
        name: 'Monthly bookings',
        type: 'amount',
        frequency: 'monthly',
        currency: 'EUR',
        values: Array.from({ length: USERS * MONTHS }, (_, index) => ({
          user: email(index % USERS),
          period: month(Math.floor(index / USERS)),
          value: 250_000,
        })),
      },
    ],
    ...(withPlan ? { plans: [PLAN] } : {}),
  }
}

async function allRecords(store: Store, companyId: string, tableId: string): Promise<DataTableRecord[]> {
  const records: DataTableRecord[] = []
  for (let afterId: string | null = null; ;) {
    const page = await store.records.page(companyId, tableId, afterId, 10_000)
    records.push(...page)
    if (page.length < 10_000) return records
    afterId = page[page.length - 1].id
  }
}

async function fullRecalculation(store: Store, clock: ManualClock): Promise<CommissionLine[]> {
  const loaded = await loadFixture(store, clock, companyFixture(DEALS, false))
  const companyId = loaded.company_id
  const [table] = await store.dataTables.list(companyId)
  const [quota] = await store.quotas.list(companyId)
  const metrics = Object.fromEntries((await store.metrics.list(companyId)).map((metric) => [metric.api_key, metric.api_key]))
  const plan: Plan = {
    id: newId(),
    company_id: companyId,
    environment: 'live',
    name: PLAN.name,
    table_id: table.id,
    user_field: PLAN.user_field,
    date_field: PLAN.date_field,
    amount_field: PLAN.amount_field,
    frequency: 'monthly',
    rate: PLAN.rate,
    filters: [],
    quota_id: quota.id,
    tiers: PLAN.tiers,
    tier_mode: 'whole',
    metrics: { attainment: metrics.attainment, tier: metrics.tier, bonus: metrics.bonus },
    created_at: clock.now().toISOString(),
    modified_at: clock.now().toISOString(),
  }

  const records = await allRecords(store, companyId, table.id)
  const users = userDirectory(await store.users.list(companyId, { offset: 0, limit: USERS }))
  const values = await store.quotaValues.page(companyId, quota.id, { limit: USERS * MONTHS })
  const quotaValues = new Map(values.map((value) => [`${value.user_id}|${value.period}`, value.value]))
  const settings = companySettings((await store.companies.get(companyId))!)
  const pure: number[] = []
  for (let round = 0; round < 5; round++) {
    const started = performance.now()
    calculatePlan({ plan, records, users, quota, quotaValues }, settings)
    pure.push(performance.now() - started)
  }

  await store.plans.save([plan])
  const held = eventLoopHolds()
  let started = performance.now()
  // On the system's clock, as the service stamps rows: each plan's as they are written (`stampedBy`).
  const first = await store.transaction(async (tx) => recalculate(tx, companyId, { everything: true }, await stampedBy(systemClock, tx)))
  const withStore = performance.now() - started
  const heldFirst = held.longest()
  await setTimeout(5) // a turn between the two, so that the second's hold is its own
  started = performance.now()
  const again = await store.transaction(async (tx) => recalculate(tx, companyId, { everything: true }, await stampedBy(systemClock, tx)))
  const unchanged = performance.now() - started
  const heldAgain = held.longest()
  held.stop()

  console.log(`full recalculation of ${DEALS.toLocaleString('en')} deals, ${USERS} users, ${MONTHS} months (${first.cells} cells)`)
  console.log(
    `  pure engine            ${rate(DEALS, median(pure)).padStart(10)} deals/s   (median of 5, ${median(pure).toFixed(0)} ms; target ≥ 500,000)`,
  )
  console.log(
    `  with the store, first  ${rate(DEALS, withStore).padStart(10)} deals/s   (${withStore.toFixed(0)} ms: ${first.lines_written} lines, ${first.statements_written} statements written; target ≥ 100,000)`,
  )
  console.log(
    `  with the store, again  ${rate(DEALS, unchanged).padStart(10)} deals/s   (${unchanged.toFixed(0)} ms: ${again.lines_written} lines written)`,
  )
  console.log(
    `  event loop held         ${heldFirst.toFixed(0).padStart(7)} ms at most (first), ${heldAgain.toFixed(0)} ms (again): what a request waits meanwhile`,
  )
  return store.commissionLines.findOfPlan(companyId, plan.id)
}

/**
 * The longest the event loop went without a turn, measured by a 1 ms interval: `longest` gives it since the last
 * call. A recalculation on the thread that serves HTTP holds every request that long.
 */
function eventLoopHolds(): { longest(): number; stop(): void } {
  let last = performance.now()
  let longest = 0
  const tick = setInterval(() => {
    const now = performance.now()
    longest = Math.max(longest, now - last)
    last = now
  }, 1)
  return {
    longest() {
      const now = performance.now()
      const found = Math.max(longest, now - last)
      longest = 0
      last = now
      return found
    },
    stop: () => clearInterval(tick),
  }
}

/** Milliseconds to save `lines` through a fresh store's repository, in one transaction. */
async function storeLineWrites(directory: string, lines: CommissionLine[]): Promise<number> {
  const store = openSqliteStore(join(directory, 'lines-through-the-store.sqlite'))
  try {
    const started = performance.now()
    await store.transaction((tx) => tx.commissionLines.save(lines))
    return performance.now() - started
  } finally {
    await store.close()
  }
}

/** Milliseconds to insert `lines` straight into a fresh table of (id, JSON), in one transaction (as bench:ingest's baseline). */
function straightLineWrites(directory: string, lines: CommissionLine[]): number {
  const db = new DatabaseSync(join(directory, 'lines-straight.sqlite'))
  try {
    db.exec('PRAGMA journal_mode = WAL')
    db.exec('PRAGMA synchronous = FULL')
    db.exec('CREATE TABLE lines (id TEXT PRIMARY KEY, doc TEXT NOT NULL) WITHOUT ROWID')
    const insert = db.prepare('INSERT INTO lines (id, doc) VALUES (?, ?)')
    const started = performance.now()
    db.exec('BEGIN')
    for (const line of lines) insert.run(line.id, JSON.stringify(line))
    db.exec('COMMIT')
    return performance.now() - started
  } finally {
    db.close()
  }
}

async function lineWrites(directory: string, lines: CommissionLine[]): Promise<void> {
  // In the order the first calculation wrote them: cell by cell, ids ascending.
  const ordered = lines.toSorted((a, b) => (a.id < b.id ? -1 : 1))
  const throughStore = await storeLineWrites(directory, ordered)
  const straight = straightLineWrites(directory, ordered)
  const bytes = ordered.reduce((total, line) => total + JSON.stringify(line).length, 0) / ordered.length
  console.log(
    `writing the first calculation's ${ordered.length.toLocaleString('en')} lines alone (${bytes.toFixed(0)} bytes of JSON a line)`,
  )
  console.log(
    `  through the store      ${rate(ordered.length, throughStore).padStart(10)} lines/s   (${throughStore.toFixed(0)} ms: commissionLines.save, one transaction)`,
  )
  console.log(
    `  straight into SQLite   ${rate(ordered.length, straight).padStart(10)} lines/s   (${straight.toFixed(0)} ms: a table of (id, JSON), one transaction)`,
  )
  console.log(`  store / straight       ${(throughStore / straight).toFixed(2).padStart(7)}`)
}

/** Runs a BENCH_IMPORT-deal import of new deals in the latest month into the company; its duration in ms. */
async function timedImport(store: Store, clock: ManualClock, companyId: string, round: number): Promise<number> {
  const company = (await store.companies.get(companyId))!
  const [table] = await store.dataTables.list(companyId)
  const items = Array.from({ length: IMPORTED }, (_, index) => deal(DEALS + round * IMPORTED + index, month(MONTHS - 1 - (round % MONTHS))))
  await enqueueImport(store, clock, {
    company,
    target: 'records',
    table,
    items,
    bytes: JSON.stringify(items).length,
    queueLimitBytes: Number.MAX_SAFE_INTEGER,
  })
  const now = clock.now().toISOString()
  const claimed = await store.imports.claimNext('bench', now, new Date(Date.parse(now) + 600_000).toISOString())
  if (!claimed) throw new Error('no import to claim')
  const started = performance.now()
  const result = await runClaimedImport(store, clock, claimed, 'bench')
  const elapsed = performance.now() - started
  if (result.kind !== 'finished' || result.import.error) throw new Error(`the import did not apply: ${JSON.stringify(result)}`)
  clock.advance(1_000)
  return elapsed
}

/** The import's apply time without plans, and what the plan adds, into companies of `existing` deals. */
async function importOverhead(store: Store, clock: ManualClock, existing: number): Promise<void> {
  const plain = (await loadFixture(store, clock, companyFixture(existing, false))).company_id
  const planned = (await loadFixture(store, clock, companyFixture(existing, true))).company_id
  const without: number[] = []
  const withPlans: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    without.push(await timedImport(store, clock, plain, round))
    withPlans.push(await timedImport(store, clock, planned, round))
  }
  const apply = median(without)
  const extra = median(withPlans) - apply
  console.log(
    `a ${IMPORTED.toLocaleString('en')}-deal import into ${existing.toLocaleString('en')} deals (a month of its own each round, every user), median of ${ROUNDS}`,
  )
  console.log(`  apply without plans    ${apply.toFixed(0).padStart(7)} ms`)
  console.log(`  with the plan          ${median(withPlans).toFixed(0).padStart(7)} ms`)
  console.log(`  recalculation / apply  ${(extra / apply).toFixed(2).padStart(7)}      (target ≤ 1.5)`)
}

const directory = mkdtempSync(join(tmpdir(), 'bench-calc-'))
try {
  const clock = new ManualClock('2026-01-15T00:00:00.000Z')
  const store = openSqliteStore(join(directory, 'bench.sqlite'))
  try {
    const lines = await fullRecalculation(store, clock)
    await lineWrites(directory, lines)
    // Into a table without deals (the first sync of a CRM), then into the company of the full recalculation: the
    // cells an import touches hold the deals already there, which a recalculation reads too.
    await importOverhead(store, clock, 0)
    await importOverhead(store, clock, DEALS)
  } finally {
    await store.close()
  }
} finally {
  rmSync(directory, { recursive: true, force: true })
}
