/**
 * The cost of a small request (`npm run bench:requests`). Loads the demo company (as `npm start` creates it) and
 * BENCH_COMPANIES small companies into a fresh embedded store, starts the real server on it (`commission-api
 * serve`, a child process, logging at its default level, the rate limit as configured: RATE_LIMIT_PER_SECOND,
 * raised out of the way in the first scenario), and a bare Fastify server (another child process) that answers
 * the same routes with the bytes ours answered, captured first.
 *
 * 1. Per route, BENCH_ROUNDS rounds of BENCH_SECONDS each against both servers with autocannon at
 *    BENCH_CONNECTIONS connections, ours first in odd rounds and the baseline first in even ones (this shared
 *    machine's speed drifts over seconds): discovery, a structure's fields, `/v1/users?limit=1`, a 10-row
 *    statements page, and a request without a key (401). Prints req/s, p50 and p99 of the median round, and
 *    ours/baseline (the median of the rounds' ratios of req/s). Targets: ours/baseline <= 3 on every
 *    authenticated route, p99 < 5 ms.
 * 2. BENCH_COMPANIES companies (default 100) at BENCH_RATE requests per second each (default 80, the rate limit
 *    of the server, which runs with RATE_LIMIT_PER_SECOND=BENCH_RATE) for BENCH_LOAD_SECONDS (default 30), after
 *    BENCH_WARMUP_SECONDS (default 5) of the same load whose latency is printed apart (the JIT, each company's
 *    first authentication and first answers; errors and 429s count over both), each
 *    company's requests evenly spaced on a connection of its own, alternating discovery and `/v1/users?limit=1`.
 *    Prints errors, 429s, and latency, and from the server's metrics the share of requests it took over 10 ms to
 *    answer once read, and its event loop's delay. A 429 is unexpected unless the company's last answer before it said
 *    `RateLimit-Remaining: 0` (its window was full by the server's own count). Targets: 0 errors, 0 unexpected
 *    429s, p99 < 10 ms.
 *
 * BENCH_SCENARIOS=1 or 2 runs one of them. The server's environment can be changed like any child's (LOG_LEVEL...);
 * BENCH_CLI names the CLI to start as the server (another checkout's `src/cli.ts`, to measure an earlier commit).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import autocannon from 'autocannon'
import { Client, request } from 'undici'
import { systemClock } from '../src/clock.ts'
import { demoFixture } from '../src/fixtures/demo.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import { sqliteFile } from '../src/store/open-store.ts'
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import { SERVER_NODE_FLAGS } from './server-flags.ts'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const COMPANIES = Number(process.env.BENCH_COMPANIES ?? 100)
const RATE = Number(process.env.BENCH_RATE ?? 80)
const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 30)
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 5)
const SCENARIOS = (process.env.BENCH_SCENARIOS ?? '1,2').split(',').map(Number)
const DEMO_KEY = 'cak_requests-benchmark-demo-key-not-secret'
const CLI = resolve(process.env.BENCH_CLI ?? resolve(import.meta.dirname, '../src/cli.ts'))

const companyKey = (index: number) => `cak_requests-benchmark-company-${index}-not-secret`

// ---------------------------------------------------------------------------------------------------------
// The baseline: bare Fastify answering each captured request (path and query, with or without a key) with its
// captured status and bytes.

if (process.argv[2] === '--baseline') {
  const { default: Fastify } = await import('fastify')
  const captured = JSON.parse(readFileSync(process.argv[3], 'utf8')) as Captured[]
  const answers = new Map(
    captured.map((answer) => [`${answer.keyed ? 'k' : '-'} ${answer.path}`, { ...answer, bytes: Buffer.from(answer.body, 'base64') }]),
  )
  const app = Fastify()
  app.get('/*', (req, reply) => {
    const answer = answers.get(`${req.headers['x-api-key'] ? 'k' : '-'} ${req.url}`)
    if (!answer) return reply.code(404).send()
    return reply.code(answer.status).header('content-type', 'application/json; charset=utf-8').send(answer.bytes)
  })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  console.log(`baseline listening on ${url}`)
} else {
  await main()
}

// ---------------------------------------------------------------------------------------------------------

interface Route {
  name: string
  path: string
  keyed: boolean
}

interface Captured {
  path: string
  keyed: boolean
  status: number
  body: string
}

interface Run {
  rps: number
  p50: number
  p99: number
  /** Answers whose status was not the route's. */
  wrong: number
  errors: number
}

async function main(): Promise<void> {
  for (const [name, value] of Object.entries({ ROUNDS, SECONDS, CONNECTIONS, COMPANIES, RATE, LOAD_SECONDS, WARMUP_SECONDS })) {
    if (!Number.isInteger(value) || value < 1) throw new Error(`BENCH_${name} must be a whole number >= 1`)
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-requests-'))
  const children: ChildProcess[] = []
  try {
    const structureId = await seed(dataDir)
    const routes: Route[] = [
      { name: 'discovery', path: '/v2/data-structures', keyed: true },
      { name: 'fields', path: `/v2/data-structures/${structureId}/fields`, keyed: true },
      { name: 'users, limit=1', path: '/v1/users?limit=1', keyed: true },
      { name: 'statements, limit=10', path: `/v2/reporting/${structureId}/statements?limit=10`, keyed: true },
      { name: 'no key (401)', path: '/v1/users?limit=1', keyed: false },
    ]
    console.log(`load average at the start: ${loadAverage()}`)
    if (SCENARIOS.includes(1)) {
      const ours = await startChild([...SERVER_NODE_FLAGS, CLI, 'serve'], { DATA_DIR: dataDir, RATE_LIMIT_PER_SECOND: '1000000' })
      children.push(ours.child)
      const captured = await capture(ours.url, routes)
      const capturedFile = join(dataDir, 'captured.json')
      writeFileSync(capturedFile, JSON.stringify(captured))
      const baseline = await startChild([resolve(import.meta.filename), '--baseline', capturedFile], {})
      children.push(baseline.child)
      await expectSameAnswers(baseline.url, captured)
      await compareRoutes(routes, ours.url, baseline.url, captured)
      await stop(ours.child)
      await stop(baseline.child)
    }
    if (SCENARIOS.includes(2)) {
      const ours = await startChild([...SERVER_NODE_FLAGS, CLI, 'serve'], { DATA_DIR: dataDir, RATE_LIMIT_PER_SECOND: String(RATE) })
      children.push(ours.child)
      await manyCompanies(ours.url)
    }
    console.log(`load average at the end: ${loadAverage()}`)
  } finally {
    await Promise.all(children.map(stop))
    rmSync(dataDir, { recursive: true, force: true })
  }
}

/** The demo company (its statement structure's id is returned) and COMPANIES small ones, each with a known key. */
async function seed(dataDir: string): Promise<string> {
  mkdirSync(dataDir, { recursive: true })
  const store = openSqliteStore(sqliteFile({ dataDir }))
  try {
    const demo = demoFixture()
    demo.api_keys = [{ user: demo.users![0].email, secret: DEMO_KEY }]
    const loaded = await loadFixture(store, systemClock, demo)
    for (let index = 0; index < COMPANIES; index++) {
      await loadFixture(store, systemClock, {
        company: { name: `Tenant ${index}`, default_currency: 'EUR' },
        users: Array.from({ length: 5 }, (_, user) => ({ email: `user${user}@tenant${index}.example`, name: `User ${user}` })),
        api_keys: [{ user: `user0@tenant${index}.example`, secret: companyKey(index) }],
      })
    }
    const structures = await store.structures.list(loaded.company_id)
    return structures.find((structure) => structure.type === 'statement_reporting' && structure.environment === 'live')!.id
  } finally {
    await store.close()
  }
}

async function startChild(args: string[], env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, PORT: '0', DEMO: 'off', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let output = ''
  for (;;) {
    const match = output.match(/listening on (http:\/\/\S+)/)
    if (match) {
      // The request log lines (one a request at the default level) are read and dropped, as a collector would.
      child.stdout!.resume()
      return { child, url: match[1] }
    }
    if (child.exitCode !== null) throw new Error(`child exited before it was ready:\n${output}`)
    const [chunk] = (await Promise.race([once(child.stdout!, 'data'), once(child, 'exit')])) as [Buffer | number]
    if (Buffer.isBuffer(chunk)) output += chunk.toString()
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill('SIGTERM')
  await once(child, 'exit')
}

/** Our answer to each route: the baseline serves these bytes. */
async function capture(url: string, routes: Route[]): Promise<Captured[]> {
  const captured: Captured[] = []
  for (const route of routes) {
    const response = await request(url + route.path, { headers: route.keyed ? { 'x-api-key': DEMO_KEY } : {} })
    const body = Buffer.from(await response.body.arrayBuffer())
    const expected = route.keyed ? 200 : 401
    if (response.statusCode !== expected) throw new Error(`${route.path} answered ${response.statusCode}, expected ${expected}: ${body}`)
    captured.push({ path: route.path, keyed: route.keyed, status: response.statusCode, body: body.toString('base64') })
  }
  return captured
}

async function expectSameAnswers(url: string, captured: Captured[]): Promise<void> {
  for (const answer of captured) {
    const response = await request(url + answer.path, { headers: answer.keyed ? { 'x-api-key': DEMO_KEY } : {} })
    const body = Buffer.from(await response.body.arrayBuffer()).toString('base64')
    if (response.statusCode !== answer.status || body !== answer.body)
      throw new Error(`the baseline's answer to ${answer.path} differs from ours`)
  }
}

/** One autocannon run of SECONDS at CONNECTIONS connections. */
async function load(url: string, route: Route, status: number): Promise<Run> {
  const result = await autocannon({
    url: url + route.path,
    connections: CONNECTIONS,
    duration: SECONDS,
    headers: route.keyed ? { 'x-api-key': DEMO_KEY } : {},
  })
  const answered = Object.entries(result.statusCodeStats ?? {}).reduce(
    (sum, [code, stats]) => sum + (Number(code) === status ? 0 : (stats?.count ?? 0)),
    0,
  )
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    wrong: answered,
    errors: result.errors + result.timeouts,
  }
}

// Declarations, not constants: main() runs from the top-level await above, before constants below it exist.
function loadAverage(): string {
  return loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')
}

function median(values: number[]): number {
  return values.toSorted((a, b) => a - b)[Math.floor((values.length - 1) / 2)]
}

async function compareRoutes(routes: Route[], oursUrl: string, baselineUrl: string, captured: Captured[]): Promise<void> {
  console.log(`\n1. One route at a time, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s per server and route (autocannon)`)
  const rows: string[] = []
  for (const [index, route] of routes.entries()) {
    const status = captured[index].status
    // Warm-up, unmeasured: the JIT, the caches, the connections.
    await load(oursUrl, { ...route }, status)
    const ours: Run[] = []
    const baseline: Run[] = []
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 2 === 0) {
        ours.push(await load(oursUrl, route, status))
        baseline.push(await load(baselineUrl, route, status))
      } else {
        baseline.push(await load(baselineUrl, route, status))
        ours.push(await load(oursUrl, route, status))
      }
    }
    const wrong = [...ours, ...baseline].reduce((sum, run) => sum + run.wrong + run.errors, 0)
    if (wrong > 0) throw new Error(`${route.name}: ${wrong} answers with another status than ${status}, or errors`)
    const ratios = ours.map((run, round) => baseline[round].rps / run.rps)
    const mid = (runs: Run[]) => runs.toSorted((a, b) => a.rps - b.rps)[Math.floor((runs.length - 1) / 2)]
    const [o, b] = [mid(ours), mid(baseline)]
    const ratio = median(ratios)
    const target = route.keyed ? `  ${ratio <= 3 && o.p99 < 5 ? 'ok' : 'MISSED'}` : ''
    rows.push(
      `  ${route.name.padEnd(22)} ours ${Math.round(o.rps).toLocaleString('en').padStart(7)} req/s p50 ${o.p50} ms p99 ${String(o.p99).padStart(3)} ms | ` +
        `baseline ${Math.round(b.rps).toLocaleString('en').padStart(7)} req/s p50 ${b.p50} ms p99 ${String(b.p99).padStart(3)} ms | ` +
        `ours/baseline ${ratio.toFixed(2)} (rounds ${ratios.map((value) => value.toFixed(2)).join(' ')})${target}`,
    )
    console.log(rows.at(-1))
  }
  console.log('  targets: ours/baseline <= 3 and p99 < 5 ms on every authenticated route')
}

/** What the server's own metrics say: requests answered, those answered within 10 ms, its event loop's delay. */
interface ServerFigures {
  answered: number
  within10ms: number
  lagP99Ms: number
  lagMaxMs: number
}

/**
 * Reads the server's `/metrics`. The event-loop delay is measured since the previous read (prom-client resets it
 * when it collects), so a read at the start of the measured seconds leaves the end's read to describe them.
 */
async function serverFigures(url: string): Promise<ServerFigures> {
  const text = await (await request(`${url}/metrics`)).body.text()
  const sum = (pattern: RegExp) => [...text.matchAll(pattern)].reduce((total, match) => total + Number(match[1]), 0)
  const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN) * 1000
  return {
    answered: sum(/^commission_api_http_request_duration_seconds_count\{[^}]*\} (\S+)$/gm),
    within10ms: sum(/^commission_api_http_request_duration_seconds_bucket\{[^}]*le="0\.01"[^}]*\} (\S+)$/gm),
    lagP99Ms: gauge('nodejs_eventloop_lag_p99_seconds'),
    lagMaxMs: gauge('nodejs_eventloop_lag_max_seconds'),
  }
}

/** The percentiles of `values`, each as milliseconds with one decimal. */
function percentiles(values: number[]): (fraction: number) => string {
  const sorted = values.toSorted((a, b) => a - b)
  return (fraction) => sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)].toFixed(1)
}

/** COMPANIES companies at RATE requests per second each, evenly spaced, for LOAD_SECONDS after WARMUP_SECONDS. */
async function manyCompanies(url: string): Promise<void> {
  console.log(
    `\n2. ${COMPANIES} companies at ${RATE} requests/s each (rate limit ${RATE}/s) for ${LOAD_SECONDS} s after ${WARMUP_SECONDS} s of warm-up, discovery and users in turn`,
  )
  const interval = 1000 / RATE
  const latencies: number[] = []
  const warmupLatencies: number[] = []
  let errors = 0
  let refused = 0
  let unexpected = 0
  let lateMs = 0
  const pending = new Set<Promise<void>>()
  const companies = Array.from({ length: COMPANIES }, (_, index) => ({
    key: companyKey(index),
    // Staggered, so that the companies do not all send at the same millisecond.
    next: (index * interval) / COMPANIES,
    sent: 0,
    lastRemaining: null as string | null,
  }))
  // Each company's requests go over one connection of its own, one at a time.
  const clients = companies.map(() => new Client(url, { pipelining: 1 }))
  let atMeasureStart: Promise<ServerFigures> | null = null
  const started = performance.now()
  const measuredFrom = started + WARMUP_SECONDS * 1000
  const end = measuredFrom + LOAD_SECONDS * 1000
  while (performance.now() < end) {
    const now = performance.now() - started
    if (!atMeasureStart && now >= WARMUP_SECONDS * 1000) atMeasureStart = serverFigures(url)
    for (const [index, company] of companies.entries()) {
      while (company.next <= now) {
        lateMs = Math.max(lateMs, now - company.next)
        company.next += interval
        const path = company.sent++ % 2 === 0 ? '/v2/data-structures' : '/v1/users?limit=1'
        const sent = performance.now()
        const done: Promise<void> = clients[index]
          .request({ method: 'GET', path, headers: { 'x-api-key': company.key } })
          .then(async (response) => {
            await response.body.arrayBuffer()
            ;(sent < measuredFrom ? warmupLatencies : latencies).push(performance.now() - sent)
            if (response.statusCode === 429) {
              refused++
              if (company.lastRemaining !== '0') unexpected++
            } else if (response.statusCode !== 200) errors++
            else company.lastRemaining = String(response.headers['ratelimit-remaining'])
          })
          .catch(() => {
            errors++
          })
          .finally(() => pending.delete(done))
        pending.add(done)
      }
    }
    await new Promise((next) => setTimeout(next, 1))
  }
  await Promise.all(pending)
  await Promise.all(clients.map((client) => client.close()))
  const [before, after] = [await atMeasureStart!, await serverFigures(url)]
  const warmup = percentiles(warmupLatencies)
  console.log(
    `  warm-up (not measured): ${warmupLatencies.length.toLocaleString('en')} requests, p50 ${warmup(0.5)} ms, p99 ${warmup(0.99)} ms, max ${warmup(1)} ms`,
  )
  const at = percentiles(latencies)
  const seconds = (performance.now() - measuredFrom) / 1000
  console.log(
    `  ${latencies.length.toLocaleString('en')} requests (${Math.round(latencies.length / seconds).toLocaleString('en')}/s): p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms; ` +
      `${errors} errors, ${refused} answered 429 of which ${unexpected} unexpected (warm-up included); the generator sent up to ${lateMs.toFixed(1)} ms late`,
  )
  const answered = after.answered - before.answered
  const slow = answered - (after.within10ms - before.within10ms)
  console.log(
    `  in the server (from its metrics, over the measured seconds): ${((slow / answered) * 100).toFixed(2)} % of ${answered.toLocaleString('en')} requests took over 10 ms from being read to being answered; event-loop delay p99 ${after.lagP99Ms.toFixed(1)} ms, max ${after.lagMaxMs.toFixed(1)} ms`,
  )
  console.log(
    `  targets: 0 errors (${errors === 0 ? 'ok' : 'MISSED'}), 0 unexpected 429s (${unexpected === 0 ? 'ok' : 'MISSED'}), p99 < 10 ms (${Number(at(0.99)) < 10 ? 'ok' : 'MISSED'})`,
  )
}
