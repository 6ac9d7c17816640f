/**
 * The v2 extraction benchmark (`npm run bench:v2`): loads STATEMENTS statements into the embedded store, starts
 * the real server on it (`commission-api serve`, a child process), walks every statement through `next_url`
 * with limit=2000 over HTTP, and compares the walk with a baseline server (another child process) that serves
 * the same pages as pre-serialized bytes. After one warm-up walk of each server, it measures ROUNDS rounds:
 * each round walks both servers back to back, ours first in even rounds and the baseline first in odd ones, so
 * a drift in the speed of a shared machine favours neither side; every measured walk of ours must return the
 * warm-up walk's bytes. Prints rows per second of the median walk, page latencies (first and last ten pages,
 * pooled over the rounds), the server's peak memory, and the ratios the targets are stated in: ours/baseline is
 * the median of the per-round ratios, with their range.
 *
 * Options (environment): BENCH_STATEMENTS (default 200000), BENCH_USERS (default 50), BENCH_ROUNDS (default 10),
 * BENCH_RENDER (default yes; `no` leaves the statements without renderings, so every page renders its rows as it
 * reads them: the path of a structure other than the company's first, or of a page read while a configuration
 * change is being rendered), BENCH_COMPRESSED_ROUNDS (default 3: the walks asking for gzip, then br, printed beside
 * the plain one; 0 skips them), BENCH_SOAK_S (default 0; else, last, walks the server again and again for that
 * many seconds, at least six cycles of four walks after one to settle, and prints its resident memory at the start,
 * along the way and at the end: a leak shows as growth), BENCH_ENDPOINT (default `statements`; `records` walks
 * BENCH_STATEMENTS commission lines of a record reporting structure instead, `/v2/reporting/{id}/records`, whose
 * rows are rendered as they are read; `v1-records` walks BENCH_STATEMENTS records of a data table through the v1
 * list, `/v1/tables/deals/records`, whose pages are found by `offset`).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { request } from 'undici'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { systemClock } from '../src/clock.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import { newId } from '../src/ids.ts'
import type { CommissionLine, DataTableRecord, Statement, StatementStatus } from '../src/store/model.ts'
import type { Store } from '../src/store/port.ts'
import { sqliteFile } from '../src/store/open-store.ts'
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import { renderStatements } from '../src/v2/statement-texts.ts'
import { memoryOf } from './process-memory.ts'
import { SERVER_NODE_FLAGS } from './server-flags.ts'

const STATEMENTS = Number(process.env.BENCH_STATEMENTS ?? 200_000)
const ENDPOINTS = ['statements', 'records', 'v1-records']
const ENDPOINT = process.env.BENCH_ENDPOINT ?? 'statements'
const ROWS_NAME: Record<string, string> = { statements: 'statements', records: 'commission lines', 'v1-records': 'data-table records' }
const USERS = Number(process.env.BENCH_USERS ?? 50)
const RENDER = process.env.BENCH_RENDER !== 'no'
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10)
const COMPRESSED_ROUNDS = Number(process.env.BENCH_COMPRESSED_ROUNDS ?? 3)
const SOAK_S = Number(process.env.BENCH_SOAK_S ?? 0)
const LIMIT = 2000
const API_KEY = 'cak_benchmark-key-not-secret-at-all'
const CLI = resolve(import.meta.dirname, '../src/cli.ts')
const STATUSES: StatementStatus[] = ['paid', 'pending', 'validated']
const TIERS = ['bronze', 'silver', 'gold']

// ---------------------------------------------------------------------------------------------------------
// The baseline server: a child process that answers each known path with its stored bytes.

if (process.argv[2] === '--baseline') {
  const directory = process.argv[3]
  const pages = new Map<string, Buffer>()
  const index = JSON.parse(readFileSync(join(directory, 'index.json'), 'utf8')) as Record<string, string>
  for (const [path, file] of Object.entries(index)) pages.set(path, readFileSync(join(directory, file)))
  const server = createServer((req, res) => {
    const body = pages.get(req.url ?? '')
    if (!body) {
      res.writeHead(404).end()
      return
    }
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length }).end(body)
  })
  server.listen(0, '127.0.0.1', () => {
    const address = server.address()
    console.log(`baseline listening on http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`)
  })
} else {
  await main()
}

// ---------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error(`BENCH_ROUNDS must be a whole number >= 1, got ${process.env.BENCH_ROUNDS}`)
  if (!ENDPOINTS.includes(ENDPOINT)) throw new Error(`BENCH_ENDPOINT must be one of ${ENDPOINTS.join(', ')}, got ${ENDPOINT}`)
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-v2-'))
  const children: ChildProcess[] = []
  try {
    console.log(`Loading ${STATEMENTS.toLocaleString('en')} ${ROWS_NAME[ENDPOINT]} of ${USERS} users into ${dataDir} ...`)
    const loadStarted = performance.now()
    const tableId = await seed(dataDir)
    console.log(`  loaded in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s`)

    const ours = await startChild(['serve'], { DATA_DIR: dataDir }, /listening on (http:\/\/\S+)/)
    children.push(ours.child)
    const firstPath =
      ENDPOINT === 'v1-records' ? `/v1/tables/deals/records?limit=${LIMIT}` : `/v2/reporting/${tableId}/${ENDPOINT}?limit=${LIMIT}`
    const warmUp = await walkAll(ours.url, firstPath)
    if (warmUp.rows !== STATEMENTS) throw new Error(`the walk returned ${warmUp.rows} rows, expected ${STATEMENTS}`)

    const pagesDir = join(dataDir, 'pages')
    mkdirSync(pagesDir)
    const index: Record<string, string> = {}
    warmUp.bodies.forEach((body, page) => {
      index[warmUp.paths[page]] = `${page}.json`
      writeFileSync(join(pagesDir, `${page}.json`), body)
    })
    writeFileSync(join(pagesDir, 'index.json'), JSON.stringify(index))
    const baseline = await startChild([resolve(import.meta.filename), '--baseline', pagesDir], {}, /listening on (http:\/\/\S+)/, true)
    children.push(baseline.child)
    if (readdirSync(pagesDir).length !== warmUp.bodies.length + 1) throw new Error('the baseline pages differ from the walk')
    expectSame(warmUp, await walkAll(baseline.url, firstPath), 'the baseline warm-up walk')

    const rounds = await measureRounds(ours.url, baseline.url, firstPath, warmUp)
    report(warmUp, rounds, peakRss(ours.child.pid))
    if (COMPRESSED_ROUNDS > 0) await compressedWalks(ours.url, firstPath, warmUp, rounds)
    if (SOAK_S > 0) await soak(ours.url, firstPath, warmUp, ours.child.pid!)
  } finally {
    for (const child of children) child.kill('SIGTERM')
    await Promise.all(children.map((child) => (child.exitCode === null ? once(child, 'exit') : undefined)))
    rmSync(dataDir, { recursive: true, force: true })
  }
}

/** Creates the company (users, metrics, one statement structure, a known key) and its statements; returns the structure id. */
async function seed(dataDir: string): Promise<string> {
  const store = openSqliteStore(sqliteFile({ dataDir }))
  try {
    const users = Array.from({ length: USERS }, (_, index) => ({
      email: `rep${index}@bench.example`,
      name: `Rep ${index}`,
      currency: index % 3 ? 'EUR' : 'USD',
    }))
    const loaded = await loadFixture(store, systemClock, {
      company: { name: 'Bench', default_currency: 'EUR' },
      users,
      custom_metrics: [
        { api_key: 'attainment', name: 'Attainment', kind: 'percentage' },
        { api_key: 'tier', name: 'Tier', kind: 'enum', enum_values: TIERS },
        { api_key: 'bonus', name: 'Bonus', kind: 'amount', currencies: ['EUR', 'USD'] },
      ],
      data_tables: [
        {
          key: 'deals',
          name: 'Deals',
          id_field: 'deal_id',
          name_field: 'name',
          fields: [
            { api_key: 'deal_id', name: 'Deal id', type: 'string' },
            { api_key: 'name', name: 'Name', type: 'string' },
            { api_key: 'amount', name: 'Amount', type: 'amount' },
            { api_key: 'close_date', name: 'Close date', type: 'date' },
          ],
        },
      ],
      reporting_structures: [
        ENDPOINT !== 'statements'
          ? {
              name: 'Deal commissions',
              type: 'record_reporting',
              data_table: 'deals',
              metrics: ['attainment', 'tier', 'bonus'],
              fields: ['name', 'amount', 'close_date'],
            }
          : { name: 'Statements', type: 'statement_reporting', metrics: ['attainment', 'tier', 'bonus'] },
      ],
      api_keys: [{ user: users[0].email, secret: API_KEY }],
    })
    const companyId = loaded.company_id
    const [structure] = await store.structures.list(companyId)
    const userIds = [
      ...(
        await store.users.findByEmails(
          companyId,
          users.map((user) => user.email),
        )
      ).values(),
    ].map((user) => user.id)
    const base = Date.parse('2024-01-01T00:00:00Z')
    const batch = 10_000
    if (ENDPOINT === 'records') {
      await seedLines(store, companyId, structure.data_table_id!, userIds, base)
      return structure.id
    }
    if (ENDPOINT === 'v1-records') {
      await seedRecords(store, companyId, structure.data_table_id!, base)
      return structure.id
    }
    for (let start = 0; start < STATEMENTS; start += batch) {
      const statements: Statement[] = []
      for (let index = start; index < Math.min(STATEMENTS, start + batch); index++) {
        const currency = index % 3 ? 'EUR' : 'USD'
        const month = index % 24
        statements.push({
          id: newId(),
          company_id: companyId,
          environment: 'live',
          user_id: userIds[index % userIds.length],
          date: new Date(Date.UTC(2024, month + 1, 0)).toISOString().slice(0, 10),
          plan: 'Sales plan',
          status: STATUSES[index % 3],
          currency,
          payment: Math.round((index * 7919) % 100_000) / 10,
          target: 5000,
          target_achievement: (index % 150) / 100,
          on_target_earning: 4000,
          achievement: 4500,
          metrics: { attainment: (index % 150) / 100, tier: TIERS[index % 3], bonus: { value: index % 1000, currency } },
          dimensions: { region: ['EMEA'] },
          plan_id: null,
          period: null,
          modified_at: new Date(base + index * 1000).toISOString(),
        })
      }
      await store.statements.insertMany(statements)
    }
    if (RENDER) {
      // As loading a fixture does: the statements' v2 rows are rendered ahead of reads (src/v2/statement-texts.ts).
      const renderStarted = performance.now()
      const rendered = await renderStatements(store, companyId)
      console.log(
        `  rendered ${rendered.toLocaleString('en')} statement rows ahead of reads in ${((performance.now() - renderStarted) / 1000).toFixed(1)} s`,
      )
    }
    return structure.id
  } finally {
    await store.close()
  }
}

/** STATEMENTS commission lines of the deals table, as a calculation writes them (with their records' values). */
async function seedLines(store: Store, companyId: string, tableId: string, userIds: string[], base: number): Promise<void> {
  const batch = 10_000
  for (let start = 0; start < STATEMENTS; start += batch) {
    const lines: CommissionLine[] = []
    for (let index = start; index < Math.min(STATEMENTS, start + batch); index++) {
      const currency = index % 3 ? 'EUR' : 'USD'
      const date = new Date(Date.UTC(2024, index % 24, (index % 28) + 1)).toISOString().slice(0, 10)
      lines.push({
        id: newId(),
        company_id: companyId,
        environment: 'live',
        table_id: tableId,
        record_id: newId(),
        user_id: userIds[index % userIds.length],
        plan: 'Sales plan',
        date,
        commission: Math.round((index * 7919) % 100_000) / 100,
        currency,
        record_values: {
          deal_id: `D-${index}`,
          name: `Deal ${index}`,
          amount: { value: 500 + (index % 9_500), currency },
          close_date: date,
        },
        metrics: { attainment: (index % 150) / 100, tier: TIERS[index % 3], bonus: { value: index % 1000, currency } },
        plan_id: null,
        period: null,
        modified_at: new Date(base + index * 1000).toISOString(),
      })
    }
    await store.commissionLines.insertMany(lines)
  }
}

/** STATEMENTS records of the deals table, as an import writes them. */
async function seedRecords(store: Store, companyId: string, tableId: string, base: number): Promise<void> {
  const batch = 10_000
  for (let start = 0; start < STATEMENTS; start += batch) {
    const records: DataTableRecord[] = []
    for (let index = start; index < Math.min(STATEMENTS, start + batch); index++) {
      const currency = index % 3 ? 'EUR' : 'USD'
      const stamp = new Date(base + index * 1000).toISOString()
      records.push({
        id: newId(),
        company_id: companyId,
        table_id: tableId,
        external_id: `D-${index}`,
        values: {
          deal_id: `D-${index}`,
          name: `Deal ${index}`,
          amount: { value: 500 + (index % 9_500), currency },
          close_date: new Date(Date.UTC(2024, index % 24, (index % 28) + 1)).toISOString().slice(0, 10),
        },
        overrides: {},
        created_at: stamp,
        modified_at: stamp,
      })
    }
    await store.records.saveMany(companyId, records)
  }
}

/** Starts a child Node process and waits for the line that gives its URL. */
async function startChild(args: string[], env: Record<string, string>, ready: RegExp, isScript = false) {
  const child = spawn(process.execPath, isScript ? args : [...SERVER_NODE_FLAGS, CLI, ...args], {
    env: { ...process.env, PORT: '0', DEMO: 'off', LOG_LEVEL: 'warn', RATE_LIMIT_PER_SECOND: '1000000', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let output = ''
  for (;;) {
    const match = output.match(ready)
    if (match) return { child, url: match[1] }
    if (child.exitCode !== null) throw new Error(`child exited before it was ready:\n${output}`)
    const [chunk] = (await Promise.race([once(child.stdout!, 'data'), once(child, 'exit')])) as [Buffer | number]
    if (Buffer.isBuffer(chunk)) output += chunk.toString()
  }
}

type Encoding = 'gzip' | 'br'

function decompress(encoding: Encoding, bytes: Buffer): Buffer {
  return encoding === 'gzip' ? gunzipSync(bytes) : brotliDecompressSync(bytes)
}

interface Walk {
  rows: number
  seconds: number
  /** Bytes received: the compressed ones when the walk asked for an encoding. */
  wireBytes: number
  /** Milliseconds from sending a page's request to holding its whole body. */
  latencies: number[]
  paths: string[]
  bodies: Buffer[]
}

/**
 * Follows next_url from `path` on `origin` (its path and query: the baseline answers the same ones). With an
 * `encoding`, asks for it and decompresses each page (the time counts); `wireBytes` is then what was sent.
 */
async function walkAll(origin: string, path: string, encoding?: Encoding): Promise<Walk> {
  const walk: Walk = { rows: 0, seconds: 0, latencies: [], paths: [], bodies: [], wireBytes: 0 }
  const started = performance.now()
  let next: string | null = path
  while (next) {
    const sent = performance.now()
    const response = await request(origin + next, {
      headers: { 'x-api-key': API_KEY, ...(encoding ? { 'accept-encoding': encoding } : {}) },
    })
    const wire = Buffer.from(await response.body.arrayBuffer())
    walk.wireBytes += wire.length
    if (encoding && response.headers['content-encoding'] !== encoding) throw new Error(`${next} was not answered in ${encoding}`)
    const body = encoding ? decompress(encoding, wire) : wire
    walk.latencies.push(performance.now() - sent)
    if (response.statusCode !== 200) throw new Error(`${next} answered ${response.statusCode}: ${body.toString().slice(0, 300)}`)
    // A v2 page's meta, or a v1 list's `next`.
    const page = JSON.parse(body.toString()) as {
      data: unknown[]
      meta?: { has_more: boolean; next_url: string | null }
      next?: string | null
    }
    walk.rows += page.data.length
    walk.paths.push(next)
    walk.bodies.push(body)
    const nextUrl = page.meta ? (page.meta.has_more ? page.meta.next_url : null) : (page.next ?? null)
    next = nextUrl ? new URL(nextUrl).pathname + new URL(nextUrl).search : null
  }
  walk.seconds = (performance.now() - started) / 1000
  return walk
}

/** What a measured walk keeps once its bodies have been checked and dropped. */
type Timing = Pick<Walk, 'rows' | 'seconds' | 'latencies' | 'wireBytes'>

interface Round {
  ours: Timing
  baseline: Timing
  /** ours.seconds / baseline.seconds of this round. */
  ratio: number
}

/** ROUNDS rounds of one walk of each server back to back, ours first in even rounds, so a drift in speed favours neither. */
async function measureRounds(oursUrl: string, baselineUrl: string, path: string, reference: Walk): Promise<Round[]> {
  const rounds: Round[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const walkOurs = () => measure(oursUrl, path, reference, `round ${round + 1}: our walk`)
    const walkBaseline = () => measure(baselineUrl, path, reference, `round ${round + 1}: the baseline walk`)
    let ours: Timing
    let baseline: Timing
    if (round % 2 === 0) {
      ours = await walkOurs()
      baseline = await walkBaseline()
    } else {
      baseline = await walkBaseline()
      ours = await walkOurs()
    }
    rounds.push({ ours, baseline, ratio: ours.seconds / baseline.seconds })
    console.log(
      `  round ${round + 1}/${ROUNDS} (${round % 2 === 0 ? 'ours' : 'baseline'} first): ours ${ours.seconds.toFixed(2)} s, baseline ${baseline.seconds.toFixed(2)} s, ratio ${rounds[round].ratio.toFixed(2)}`,
    )
  }
  return rounds
}

/** One measured walk, checked against the warm-up walk; returns only its timings so its bodies can be collected. */
async function measure(origin: string, path: string, reference: Walk, label: string, encoding?: Encoding): Promise<Timing> {
  const walk = await walkAll(origin, path, encoding)
  expectSame(reference, walk, label)
  return { rows: walk.rows, seconds: walk.seconds, latencies: walk.latencies, wireBytes: walk.wireBytes }
}

/**
 * The walk asking for each encoding, COMPRESSED_ROUNDS times (after one warm-up walk), next to the plain walks
 * of the measured rounds: rows per second of the median walk, and the bytes sent. Every page decompresses to
 * the bytes of the plain walk.
 */
async function compressedWalks(origin: string, path: string, reference: Walk, plain: Round[]): Promise<void> {
  const plainSeconds = median(plain.map((round) => round.ours.seconds))
  console.log(`  compressed walks (Accept-Encoding; the client decompresses every page), ${COMPRESSED_ROUNDS} walks each after a warm-up:`)
  console.log(`    plain: ${Math.round(reference.rows / plainSeconds).toLocaleString('en')} rows/s, ${inMiB(reference.wireBytes)}`)
  for (const encoding of ['gzip', 'br'] as const) {
    await measure(origin, path, reference, `the ${encoding} warm-up walk`, encoding)
    const walks: Timing[] = []
    for (let round = 0; round < COMPRESSED_ROUNDS; round++)
      walks.push(await measure(origin, path, reference, `${encoding} walk ${round + 1}`, encoding))
    const seconds = median(walks.map((walk) => walk.seconds))
    console.log(
      `    ${encoding.padEnd(5)}: ${Math.round(reference.rows / seconds).toLocaleString('en')} rows/s (${(seconds / plainSeconds).toFixed(2)} x the plain walk's time), ` +
        `${inMiB(walks[0].wireBytes)} (${((100 * walks[0].wireBytes) / reference.wireBytes).toFixed(1)} % of the plain bytes)`,
    )
  }
}

/** Throws unless `walk` returned the same rows and, page by page, the same paths and bytes as `reference`. */
function expectSame(reference: Walk, walk: Walk, label: string): void {
  if (walk.rows !== reference.rows) throw new Error(`${label} returned ${walk.rows} rows, the warm-up walk ${reference.rows}`)
  if (walk.bodies.length !== reference.bodies.length)
    throw new Error(`${label} returned ${walk.bodies.length} pages, the warm-up walk ${reference.bodies.length}`)
  const page = walk.bodies.findIndex((body, index) => walk.paths[index] !== reference.paths[index] || !body.equals(reference.bodies[index]))
  if (page !== -1) throw new Error(`${label} differs from the warm-up walk at page ${page + 1} (${walk.paths[page]})`)
}

function inMiB(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
}

/**
 * Walks the server again and again for SOAK_S seconds in cycles of four walks (plain, gzip, plain, br), reads the
 * server's resident memory at the end of each cycle, and prints it at the start and the end of the soak (each the
 * median of three cycles' readings, so that one collection of garbage does not decide it), where it stood at each
 * tenth of the soak, and its peak. Every reading is taken at the same point of a cycle, while the server is warm:
 * an idle server may give memory back and a busy one take it again. One cycle runs before the soak and is not
 * counted: the first compressed walks allocate the compressors' memory, which is the server settling, not a leak.
 */
async function soak(origin: string, path: string, reference: Walk, pid: number): Promise<void> {
  const encodings = [undefined, 'gzip', undefined, 'br'] as const
  const cycle = async (label: string) => {
    for (const [index, encoding] of encodings.entries()) await measure(origin, path, reference, `${label}, walk ${index + 1}`, encoding)
    return memoryOf(pid).rss
  }
  const beforeWarmUp = memoryOf(pid).rss
  await cycle('the soak warm-up cycle')
  const started = performance.now()
  const readings: number[] = []
  const tenths: number[] = []
  while (readings.length < 6 || performance.now() - started < SOAK_S * 1000) {
    readings.push(await cycle(`soak cycle ${readings.length + 1}`))
    tenths[Math.min(9, Math.floor((performance.now() - started) / (SOAK_S * 100)))] = readings.at(-1)!
  }
  const atStart = median(readings.slice(0, 3))
  const atEnd = median(readings.slice(-3))
  const growth = (100 * (atEnd - atStart)) / atStart
  console.log(
    `  soak: ${readings.length} cycles of 4 walks in ${((performance.now() - started) / 1000).toFixed(0)} s; server memory ${atStart.toFixed(0)} MiB at the start, ${atEnd.toFixed(0)} MiB at the end ` +
      `(${growth >= 0 ? '+' : ''}${growth.toFixed(1)} %, target under 10 %: ${verdict(growth < 10)}), peak ${peakRss(pid)?.toFixed(0) ?? 'n/a'} MiB\n` +
      `    before the warm-up cycle ${beforeWarmUp.toFixed(0)} MiB; at each tenth of the soak: ${Array.from(tenths, (mib) => (mib === undefined ? '-' : mib.toFixed(0))).join(' ')} MiB`,
  )
}

/** The peak resident memory of a process (Linux: VmHWM), in MiB; null where /proc is not there. */
function peakRss(pid: number | undefined): number | null {
  if (pid === undefined) return null
  try {
    const { peak } = memoryOf(pid)
    return Number.isFinite(peak) ? peak : null
  } catch {
    return null
  }
}

function percentile(values: number[], fraction: number): number {
  const sorted = values.toSorted((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]
}

// Declarations, not constants: main() runs from the top-level await above, before constants below it exist.
function ms(value: number): string {
  return `${value.toFixed(1)} ms`
}

function verdict(ok: boolean): string {
  return ok ? 'ok' : 'MISSED'
}

/** The median of `values` (the lower of the two middle ones for an even count, like percentile). */
function median(values: number[]): number {
  return percentile(values, 0.5)
}

/** Prints the figures: medians over the rounds, latencies pooled over the rounds, and each round's ratio. */
function report(warmUp: Walk, rounds: Round[], peakMemory: number | null): void {
  const first = rounds.flatMap((round) => round.ours.latencies.slice(0, 10))
  const last = rounds.flatMap((round) => round.ours.latencies.slice(-10))
  const oursSeconds = median(rounds.map((round) => round.ours.seconds))
  const baselineSeconds = median(rounds.map((round) => round.baseline.seconds))
  const rowsPerSecond = warmUp.rows / oursSeconds
  const depthRatio = percentile(last, 0.5) / percentile(first, 0.5)
  const ratios = rounds.map((round) => round.ratio)
  const baselineRatio = median(ratios)
  const megabytes = warmUp.bodies.reduce((total, body) => total + body.length, 0) / 1024 / 1024
  if (ENDPOINT === 'v1-records')
    console.log(`\n(The targets below are the v2 walk's, given for comparison: the v1 walk has none of its own.)`)
  console.log(`
${ENDPOINT === 'v1-records' ? 'v1 walk' : 'v2 extraction'}: ${warmUp.rows.toLocaleString('en')} ${ROWS_NAME[ENDPOINT]}, ${warmUp.bodies.length} pages of limit=${LIMIT} (${megabytes.toFixed(0)} MiB of JSON), over HTTP, ${rounds.length} measured rounds
  ours:      ${oursSeconds.toFixed(2)} s (median), ${Math.round(rowsPerSecond).toLocaleString('en')} rows/s          target >= 100,000: ${verdict(rowsPerSecond >= 100_000)}
  first 10 pages: p50 ${ms(percentile(first, 0.5))}, p99 ${ms(percentile(first, 0.99))}   (pooled over ${rounds.length} rounds)
  last 10 pages:  p50 ${ms(percentile(last, 0.5))}, p99 ${ms(percentile(last, 0.99))}   (pooled over ${rounds.length} rounds)
  last/first p50: ${depthRatio.toFixed(2)}                          target <= 1.3: ${verdict(depthRatio <= 1.3)}
  server peak memory (VmHWM): ${peakMemory === null ? 'n/a' : `${peakMemory.toFixed(0)} MiB`}                   target <= 150 MiB: ${peakMemory === null ? 'n/a' : verdict(peakMemory <= 150)}
  baseline (pre-serialized bytes): ${baselineSeconds.toFixed(2)} s (median), ${Math.round(warmUp.rows / baselineSeconds).toLocaleString('en')} rows/s
  ours/baseline: ${baselineRatio.toFixed(2)} (median of ${rounds.length} rounds, ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})   target <= 1.5: ${verdict(baselineRatio <= 1.5)}
  rounds: ${ratios.map((ratio) => ratio.toFixed(2)).join(' ')}`)
}
