/**
 * The crash loop (`npm run test:chaos -- --cycles N --duration S`): kills the real server with SIGKILL while it
 * applies imports, again and again, and checks that every acknowledged upsert was applied exactly once.
 *
 * Each cycle starts `commission-api serve` (HTTP and the import worker, as `npm start` runs it) on one store,
 * and four clients of two companies post calls as fast as they are answered: data-table records (50 to 3,000 a
 * call, some joining a one-second debounce window) and users (1 to 200 a call), every item with an id of its own.
 * A call answered 200 is acknowledged; 429 (the import queue is full: the bound is set low) is refused; a call
 * cut by the kill is unknown. At a moment taken at random in the second half of the cycle's S seconds, as soon
 * as an import is running, the server is killed with SIGKILL; the next cycle starts it again on the same store, and the imports the dead
 * worker held are taken over once their lease (1.5 s here) expires. After the last cycle the server runs until
 * no import is left, and the store is checked:
 * - every acknowledged call is in a finished import without error, once (an import has a detail for each of its
 *   acknowledged calls, and no more but for calls cut by the kill and applied; its payloads are gone with its
 *   finish), and each of its items is there with its values, written by the run that finished its import (its
 *   `modified_at` is the import's `finished_at`): nothing lost, nothing applied twice;
 * - every unknown call is there whole or not at all; no refused call left anything; nothing else is there;
 * - no import is left scheduled or started;
 * - the first company's plan results are what a full recalculation of the records gives: the recalculations the
 *   imports committed, killed or not, left no line or statement missing, extra or different.
 * Prints a line per cycle and a summary; exits 1 on any violation. The store is a fresh SQLite file in a
 * temporary DATA_DIR, removed after.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { Agent, request } from 'undici'
import { fullRecalculationDryRun } from '../src/calculation/recalculation.ts'
import { systemClock } from '../src/clock.ts'
import { loadConfig } from '../src/config.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import type { DataImport } from '../src/store/model.ts'
import { openStore } from '../src/store/open-store.ts'
import type { Store } from '../src/store/port.ts'

const CLI = resolve(import.meta.dirname, '../src/cli.ts')
const LEASE_MS = 1500
const COMPANIES = ['alpha', 'beta'] as const
const CLIENTS_PER_COMPANY = 2

export interface CrashLoopOptions {
  cycles: number
  /** How long a cycle runs at most; the kill comes in its second half, once an import runs. */
  durationMs: number
  /** Where each line of progress goes. */
  log?: (line: string) => void
}

export interface CrashLoopReport {
  cycles: number
  /** Kills that came while an import was started (the others: none started in the cycle's second half). */
  killsDuringImport: number
  acknowledged: number
  refused: number
  unknown: number
  /** Of the unknown calls, those that were stored and applied whole. */
  unknownApplied: number
  itemsAcknowledged: number
  imports: number
  /** Imports claimed more than once: their first worker was killed, another one applied them. */
  importsTakenOver: number
  seconds: number
  /** Every violation found; empty when every check held. */
  problems: string[]
}

type Kind = 'records' | 'users'

/** One upsert call as the client sent it, and what became of it. */
interface Call {
  id: string
  company: string
  kind: Kind
  /** The record ids (deal_id) or user emails the call carried. */
  keys: string[]
  outcome: 'acknowledged' | 'refused' | 'unknown'
  importId?: string
}

interface Company {
  id: string
  key: string
}

const random = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1))
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))

/** The server as a child process, and the URL it printed. */
async function startServer(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [CLI, 'serve'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
  let output = ''
  for (;;) {
    const [chunk] = (await Promise.race([once(child.stdout!, 'data'), once(child, 'exit')])) as [Buffer | number]
    if (!Buffer.isBuffer(chunk)) throw new Error(`the server exited (${chunk}) before it listened:\n${output}`)
    output += chunk.toString()
    const match = output.match(/listening on (http:\/\/\S+)/)
    if (match) {
      child.stdout!.resume()
      return { child, url: match[1] }
    }
  }
}

/** The salespeople the deals name, seeded in each company with a target per month. */
const REPS = Array.from({ length: 5 }, (_, index) => `rep${index}@chaos.example`)
const MONTHS = ['2026-01', '2026-02', '2026-03', '2026-04', '2026-05', '2026-06']

/** A call's body: items whose ids and values name the call; deals spread over the reps and months of the plan. */
function itemsOf(call: Call): unknown[] {
  return call.kind === 'records'
    ? call.keys.map((key, index) => ({
        deal_id: key,
        deal_name: `${call.id} item ${index}`,
        owner_email: REPS[index % REPS.length],
        close_date: `${MONTHS[(index + call.keys.length) % MONTHS.length]}-15`,
        amount: index,
        amount_currency: 'EUR',
      }))
    : call.keys.map((email) => ({ email, name: call.id }))
}

/** One client: posts calls one after the other until `stop()` says the server was killed. */
async function client(url: string, company: Company, name: string, calls: Call[], stop: () => boolean, dispatcher: Agent): Promise<void> {
  for (let sequence = 0; !stop(); sequence++) {
    const kind: Kind = Math.random() < 0.8 ? 'records' : 'users'
    const id = `${name}-${sequence}`
    const size = kind === 'records' ? random(50, 3000) : random(1, 200)
    const keys = Array.from({ length: size }, (_, index) => (kind === 'records' ? `${id}-${index}` : `${id}-${index}@chaos.example`))
    const call: Call = { id, company: company.id, kind, keys, outcome: 'unknown' }
    calls.push(call)
    const path = kind === 'records' ? `/v1/tables/deals/records/bulk${Math.random() < 0.3 ? '?debounce=1' : ''}` : '/v1/users/bulk'
    const body = JSON.stringify(kind === 'records' ? itemsOf(call) : { data: itemsOf(call) })
    try {
      const response = await request(url + path, {
        dispatcher,
        method: kind === 'records' ? 'POST' : 'PUT',
        headers: { 'x-api-key': company.key, 'content-type': 'application/json' },
        body,
      })
      const answer = (await response.body.json()) as { import_id?: string }
      if (response.statusCode === 200) {
        call.outcome = 'acknowledged'
        call.importId = answer.import_id
      } else if (response.statusCode === 429) {
        call.outcome = 'refused'
        // A tenth of Retry-After: these clients push, so that the queue stays at its bound.
        await sleep(Number(response.headers['retry-after'] ?? 1) * 100)
      } else {
        throw new Error(`${path} answered ${response.statusCode}: ${JSON.stringify(answer)}`)
      }
    } catch (error) {
      // Cut by the kill: the call may or may not have been stored. Anything else is a failure of the run.
      if (!stop()) throw error
      return
    }
  }
}

/**
 * Seeds the two companies in a fresh store, a deals table each. The first also has a monthly plan with a quota and
 * two tiers over the deals of the reps, so that each of its imports is recalculated in its transaction; the second
 * has none, so that its imports run as fast as imports can.
 */
async function seed(store: Store): Promise<Company[]> {
  const companies: Company[] = []
  for (const [index, name] of COMPANIES.entries()) {
    const loaded = await loadFixture(store, systemClock, {
      company: { name: `Chaos ${name}`, default_currency: 'EUR' },
      users: [{ email: `owner@${name}.example`, name: 'Owner' }, ...REPS.map((email) => ({ email, name: 'Rep' }))],
      custom_metrics: [
        { api_key: 'attainment', name: 'Attainment', kind: 'percentage' },
        { api_key: 'tier', name: 'Tier', kind: 'enum', enum_values: ['silver', 'gold'] },
      ],
      data_tables: [
        {
          key: 'deals',
          name: 'Deals',
          id_field: 'deal_id',
          name_field: 'deal_name',
          fields: [
            { api_key: 'deal_id', name: 'Id', type: 'string' },
            { api_key: 'deal_name', name: 'Name', type: 'string' },
            { api_key: 'owner_email', name: 'Owner', type: 'string' },
            { api_key: 'close_date', name: 'Close date', type: 'date' },
            { api_key: 'amount', name: 'Amount', type: 'amount' },
          ],
        },
      ],
      quotas: [
        {
          name: 'Monthly bookings',
          type: 'amount',
          frequency: 'monthly',
          currency: 'EUR',
          values: REPS.flatMap((user) => MONTHS.map((period) => ({ user, period, value: 2_000_000 }))),
        },
      ],
      plans:
        index > 0
          ? []
          : [
              {
                name: 'Chaos plan',
                data_table: 'deals',
                user_field: 'owner_email',
                date_field: 'close_date',
                amount_field: 'amount',
                frequency: 'monthly',
                rate: 0.05,
                quota: 'Monthly bookings',
                tiers: [
                  { from: 0.8, rate: 0.06, name: 'silver' },
                  { from: 1.1, rate: 0.09, name: 'gold' },
                ],
                metrics: { attainment: 'attainment', tier: 'tier' },
              },
            ],
    })
    companies.push({ id: loaded.company_id, key: loaded.api_keys[0] })
  }
  return companies
}

/** Runs one cycle: serve, post, kill during an import. Returns whether the kill came while one ran. */
async function cycle(
  env: Record<string, string>,
  store: Store,
  companies: Company[],
  calls: Call[],
  index: number,
  durationMs: number,
): Promise<boolean> {
  const { child, url } = await startServer(env)
  const exited = once(child, 'exit')
  let killed = false
  const dispatcher = new Agent({ connections: 8 })
  const clients = companies.flatMap((company) =>
    Array.from({ length: CLIENTS_PER_COMPANY }, (_, number) =>
      client(url, company, `c${index}-${company.id.slice(-6)}-${number}`, calls, () => killed, dispatcher),
    ),
  )
  const clientsDone = Promise.all(clients)
  const started = Date.now()
  // A moment at random in the cycle's second half, then the first one an import runs.
  await sleep(random(durationMs / 2, durationMs * 0.9))
  let duringImport = false
  while (Date.now() - started < durationMs) {
    if ((await store.importStatistics.countUnfinished()).started > 0) {
      duringImport = true
      await sleep(random(0, 20))
      break
    }
    await sleep(5)
  }
  killed = true
  child.kill('SIGKILL')
  await exited
  await clientsDone
  await dispatcher.destroy()
  return duringImport
}

/** Serves until no import is left scheduled or started, then stops the server gracefully. */
async function drain(env: Record<string, string>, store: Store): Promise<void> {
  const { child } = await startServer(env)
  const deadline = Date.now() + 120_000
  for (;;) {
    const counts = await store.importStatistics.countUnfinished()
    if (counts.scheduled === 0 && counts.started === 0) break
    if (Date.now() > deadline) throw new Error(`imports still waiting after two minutes: ${JSON.stringify(counts)}`)
    await sleep(100)
  }
  child.kill('SIGTERM')
  await once(child, 'exit')
}

/** The checks of the module comment; returns every violation, and counts. */
async function verify(
  store: Store,
  companies: Company[],
  calls: Call[],
): Promise<Pick<CrashLoopReport, 'problems' | 'unknownApplied' | 'imports' | 'importsTakenOver'>> {
  const problems: string[] = []
  const imports = new Map<string, DataImport>()
  let unknownApplied = 0
  for (const company of companies) {
    const table = (await store.dataTables.getByKey(company.id, 'live', 'deals'))!
    const records = new Map(
      (await store.records.list(company.id, table.id, { offset: 0, limit: 10_000_000 })).map((record) => [record.external_id, record]),
    )
    const users = new Map((await store.users.list(company.id, { offset: 0, limit: 10_000_000 })).map((user) => [user.email, user]))
    const itemOf = (call: Call, key: string) => (call.kind === 'records' ? records.get(key) : users.get(key))
    const ours = calls.filter((call) => call.company === company.id)
    const importOf = async (id: string) => {
      if (!imports.has(id)) imports.set(id, (await store.imports.get(company.id, id))!)
      return imports.get(id)!
    }

    for (const call of ours) {
      const present = call.keys.filter((key) => itemOf(call, key) !== undefined).length
      if (call.outcome === 'refused' && present > 0) problems.push(`${call.id}: refused with 429, yet ${present} of its items are stored`)
      if (call.outcome === 'unknown') {
        if (present !== 0 && present !== call.keys.length)
          problems.push(`${call.id}: cut by the kill, and half applied (${present} of ${call.keys.length})`)
        if (present === call.keys.length) unknownApplied++
      }
      if (call.outcome !== 'acknowledged') continue
      const found = await importOf(call.importId!)
      if (found?.status !== 'finished' || found.error) {
        problems.push(
          `${call.id}: acknowledged in import ${call.importId}, which is ${found ? `${found.status}, error ${found.error}` : 'missing'}`,
        )
        continue
      }
      if (present !== call.keys.length)
        problems.push(`${call.id}: acknowledged, ${call.keys.length - present} of its ${call.keys.length} items are missing`)
      for (const key of call.keys) {
        const item = itemOf(call, key)
        if (!item) continue
        const named =
          call.kind === 'records'
            ? String((item as { values: Record<string, unknown> }).values.deal_name).startsWith(`${call.id} item`)
            : (item as { name: string }).name === call.id
        if (!named) problems.push(`${call.id}: ${key} holds another call's values`)
        if (item.modified_at !== found.finished_at)
          problems.push(
            `${call.id}: ${key} was written at ${item.modified_at}, not by the run that finished its import (${found.finished_at})`,
          )
      }
    }

    // Each finished import holds a detail for each call it applied, no more, and no payload any more. A call cut
    // by the kill and applied is told to its import by the time its items were written: the import's finish.
    const appliedUnknownCalls = ours.filter(
      (call) => call.outcome === 'unknown' && call.keys.every((key) => itemOf(call, key) !== undefined),
    )
    for (const found of new Set(ours.filter((call) => call.outcome === 'acknowledged').map((call) => imports.get(call.importId!)))) {
      if (found?.status !== 'finished') continue
      const acknowledged = ours.filter((call) => call.outcome === 'acknowledged' && call.importId === found.id).length
      const unknown = appliedUnknownCalls.filter((call) => itemOf(call, call.keys[0])?.modified_at === found.finished_at).length
      if (found.details.length !== acknowledged + unknown)
        problems.push(
          `import ${found.id}: ${found.details.length} details for ${acknowledged} acknowledged and ${unknown} unknown calls it applied`,
        )
      const kept = (await store.imports.payloads(company.id, found.id)).length
      if (kept > 0) problems.push(`import ${found.id}: finished, and ${kept} of its payloads kept`)
    }

    // Nothing but the calls' items (and the seeded owner and reps).
    const keys = new Set(ours.flatMap((call) => call.keys))
    for (const key of records.keys()) if (!keys.has(key)) problems.push(`record ${key} belongs to no call`)
    for (const email of users.keys())
      if (!keys.has(email) && !email.startsWith('owner@') && !REPS.includes(email)) problems.push(`user ${email} belongs to no call`)
  }
  for (const company of companies) problems.push(...(await planResultProblems(store, company)))
  const counts = await store.importStatistics.countUnfinished()
  if (counts.scheduled > 0 || counts.started > 0) problems.push(`imports left waiting: ${JSON.stringify(counts)}`)
  const all = [...imports.values()].filter(Boolean)
  return { problems, unknownApplied, imports: all.length, importsTakenOver: all.filter((found) => found.attempts > 1).length }
}

/**
 * Recalculates the company's plan in full, in a transaction rolled back: it must find nothing to write, and the
 * plan must have lines, when the imports committed every recalculation with its records.
 */
async function planResultProblems(store: Store, company: Company): Promise<string[]> {
  const [plan] = await store.plans.list(company.id)
  if (!plan) return []
  const lines = (await store.commissionLines.findOfPlan(company.id, plan.id)).length
  const summary = await fullRecalculationDryRun(store, company.id, new Date().toISOString())
  const { statements_written, statements_deleted, lines_written, lines_deleted } = summary
  const problems: string[] = []
  if (statements_written + statements_deleted + lines_written + lines_deleted > 0)
    problems.push(
      `company ${company.id}: a full recalculation of the records differs from the results the imports left: ${JSON.stringify({ statements_written, statements_deleted, lines_written, lines_deleted })}`,
    )
  if (lines === 0) problems.push(`company ${company.id}: the plan calculated no line`)
  return problems
}

/** Runs the crash loop on a fresh store: a SQLite file in a temporary DATA_DIR. */
export async function runCrashLoop({ cycles, durationMs, log = console.log }: CrashLoopOptions): Promise<CrashLoopReport> {
  const dataDir = mkdtempSync(join(tmpdir(), 'chaos-crash-loop-'))
  const env = {
    DATA_DIR: dataDir,
    PORT: '0',
    DEMO: 'off',
    LOG_LEVEL: 'warn',
    IMPORT_POLL_MS: '20',
    IMPORT_LEASE_MS: String(LEASE_MS),
    IMPORT_QUEUE_LIMIT_MB: '2',
    RATE_LIMIT_PER_SECOND: '100000',
    MONGODB_URL: '',
  }
  const store = await openStore(loadConfig({ ...process.env, ...env }))
  const began = Date.now()
  try {
    const companies = await seed(store)
    const calls: Call[] = []
    let killsDuringImport = 0
    for (let index = 1; index <= cycles; index++) {
      const before = calls.length
      const during = await cycle(env, store, companies, calls, index, durationMs)
      if (during) killsDuringImport++
      const made = calls.slice(before)
      const count = (outcome: Call['outcome']) => made.filter((call) => call.outcome === outcome).length
      log(
        `cycle ${index}/${cycles}: SIGKILL ${during ? 'during an import' : 'with no import running'}; ${count('acknowledged')} calls acknowledged, ${count('refused')} refused (429), ${count('unknown')} cut`,
      )
    }
    await drain(env, store)
    const checked = await verify(store, companies, calls)
    const acknowledged = calls.filter((call) => call.outcome === 'acknowledged')
    return {
      cycles,
      killsDuringImport,
      acknowledged: acknowledged.length,
      refused: calls.filter((call) => call.outcome === 'refused').length,
      unknown: calls.filter((call) => call.outcome === 'unknown').length,
      itemsAcknowledged: acknowledged.reduce((sum, call) => sum + call.keys.length, 0),
      seconds: Math.round((Date.now() - began) / 1000),
      ...checked,
    }
  } finally {
    await store.close()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { cycles: { type: 'string', default: '20' }, duration: { type: 'string', default: '5' } } })
  const cycles = Number(values.cycles)
  const seconds = Number(values.duration)
  if (!Number.isInteger(cycles) || cycles < 1 || !(seconds > 0)) {
    console.error('usage: npm run test:chaos -- [--cycles N (default 20)] [--duration S, seconds per cycle (default 5)]')
    process.exit(2)
  }
  const report = await runCrashLoop({ cycles, durationMs: seconds * 1000 })
  console.log(
    `\n${report.cycles} SIGKILLs (${report.killsDuringImport} while an import ran) in ${report.seconds} s: ${report.acknowledged} calls acknowledged ` +
      `(${report.itemsAcknowledged} items), ${report.refused} refused with 429, ${report.unknown} cut by a kill (${report.unknownApplied} of them stored and applied whole); ` +
      `${report.imports} imports checked, ${report.importsTakenOver} of them taken over after a kill.`,
  )
  console.log(JSON.stringify({ ...report, problems: report.problems.length }))
  if (report.problems.length > 0) {
    console.error(`\n${report.problems.length} violations:\n  ${report.problems.slice(0, 50).join('\n  ')}`)
    process.exit(1)
  }
  console.log(
    'Every acknowledged call was applied exactly once; nothing cut was half applied; nothing refused was stored; no import is left waiting.',
  )
}
