/**
 * The ingestion benchmark (`npm run bench:ingest`): starts the real server (`commission-api serve`, HTTP and
 * the import worker in one child process, on a fresh embedded store), posts BENCH_RECORDS deal records of one
 * company to `POST /v1/tables/deals/records/bulk` in batches of BENCH_BATCH, BENCH_CONCURRENCY calls at a time,
 * and polls each import until it is finished. A call answered 429 (the company's import queue is full) waits
 * its `Retry-After` and is sent again, as a client should.
 *
 * Meanwhile a reader of ANOTHER company sends a request every BENCH_READ_MS, whatever the answers (an open
 * loop, so that a stalled server shows in every request sent during the stall): `GET /health/ready` and
 * `GET /v1/users?limit=10` in turn. It starts BENCH_BASELINE_MS before the first POST: its latency then, with no
 * import running, is the baseline of the same run, against which the latency while importing is compared. Prints the records applied per second (from the first POST until the last
 * import is finished), the latency of the POSTs, the reader's latency while the import runs, and the server
 * process's resident memory before the first POST and at its peak.
 *
 * The baseline of the same run: the same records, parsed from the same bodies, inserted straight into a fresh
 * node:sqlite table (WAL, synchronous FULL, as ours) in one transaction, each as its JSON; measured before and after
 * ours, the faster kept. Prints ours/baseline: how many times longer ours takes to apply them.
 *
 * Options (environment): BENCH_RECORDS (default 100000), BENCH_BATCH (default 5000), BENCH_CONCURRENCY
 * (default 1), BENCH_READ_MS (default 25), BENCH_BASELINE_MS (default 3000). Any other variable (IMPORT_QUEUE_LIMIT_MB, IMPORT_WORKER...) is
 * passed to the server.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { DatabaseSync } from 'node:sqlite'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { Agent, request } from 'undici'
import { systemClock } from '../src/clock.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import { sqliteFile } from '../src/store/open-store.ts'
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import { memoryOf } from './process-memory.ts'
import { SERVER_NODE_FLAGS } from './server-flags.ts'

const RECORDS = Number(process.env.BENCH_RECORDS ?? 100_000)
const BATCH = Number(process.env.BENCH_BATCH ?? 5000)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 1)
const READ_MS = Number(process.env.BENCH_READ_MS ?? 25)
const BASELINE_MS = Number(process.env.BENCH_BASELINE_MS ?? 3000)
const API_KEY = 'cak_ingest-benchmark-key-not-secret'
const READER_KEY = 'cak_ingest-benchmark-reader-not-secret'
const CLI = resolve(import.meta.dirname, '../src/cli.ts')
const POLL_MS = 20

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]
const round = (value: number, digits = 1) => Number(value.toFixed(digits))

function deal(index: number): Record<string, unknown> {
  return {
    deal_id: `D-${index}`,
    deal_name: `Deal ${index} with Customer ${index % 997}`,
    owner_email: `rep${index % 50}@bench.example`,
    amount: Math.round((index % 1000) * 123.45) / 100,
    amount_currency: index % 3 ? 'EUR' : 'USD',
    close_date: `2026-${String((index % 12) + 1).padStart(2, '0')}-${String((index % 28) + 1).padStart(2, '0')}`,
    updated_at: '2026-05-31T10:00:00Z',
    is_won: index % 2 === 0,
    deal_types: index % 2 ? 'new;upsell' : 'renewal',
    seats: index % 40,
  }
}

const field = (api_key: string, type: string) => ({ api_key, name: api_key, type })

async function seedCompanies(dataDir: string): Promise<void> {
  const store = openSqliteStore(sqliteFile({ dataDir }))
  await loadFixture(store, systemClock, {
    company: { name: 'Ingest bench', default_currency: 'EUR' },
    users: [{ email: 'owner@bench.example', name: 'Owner' }],
    data_tables: [
      {
        key: 'deals',
        name: 'Deals',
        id_field: 'deal_id',
        name_field: 'deal_name',
        fields: [
          field('deal_id', 'string'),
          field('deal_name', 'string'),
          field('owner_email', 'string'),
          field('amount', 'amount'),
          field('close_date', 'date'),
          field('updated_at', 'datetime'),
          field('is_won', 'boolean'),
          field('deal_types', 'multi'),
          field('seats', 'number'),
        ],
      },
    ],
    api_keys: [{ user: 'owner@bench.example', secret: API_KEY }],
  })
  // The reader's company: another tenant, whose requests must not wait for the first one's import.
  await loadFixture(store, systemClock, {
    company: { name: 'Reader bench', default_currency: 'EUR' },
    users: Array.from({ length: 20 }, (_, index) => ({ email: `reader${index}@bench.example`, name: `Reader ${index}` })),
    api_keys: [{ user: 'reader0@bench.example', secret: READER_KEY }],
  })
  await store.close()
}

async function startServer(dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, CLI, 'serve'], {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: '0',
      DEMO: 'off',
      LOG_LEVEL: 'warn',
      IMPORT_POLL_MS: '10',
      RATE_LIMIT_PER_SECOND: '100000',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let output = ''
  for (;;) {
    const [chunk] = (await once(child.stdout!, 'data')) as [Buffer]
    output += chunk.toString()
    const match = output.match(/listening on (http:\/\/\S+)/)
    if (match) {
      child.stdout!.resume()
      return { child, url: match[1] }
    }
  }
}

interface Reply {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: any
}

async function json(url: string, options: Parameters<typeof request>[1] = {}): Promise<Reply> {
  const response = await request(url, {
    ...options,
    headers: { 'x-api-key': API_KEY, 'content-type': 'application/json', ...options.headers },
  })
  return { status: response.statusCode, headers: response.headers, body: await response.body.json() }
}

/** One request of the reader: when it was sent (ms since the bench started), what it was, how long it took. */
interface Read {
  sentAt: number
  health: boolean
  ms: number
  ok: boolean
}

/** The other company's requests, one every READ_MS whatever the answers, until stopped. */
function startReader(url: string): { stop(): Promise<Read[]> } {
  // A pool of its own: the reader never waits for a connection the uploads hold.
  const dispatcher = new Agent({ connections: 64 })
  const reads: Read[] = []
  const pending: Promise<void>[] = []
  let turn = 0
  const timer = setInterval(() => {
    const health = turn++ % 2 === 0
    const sentAt = performance.now()
    const path = health ? '/health/ready' : '/v1/users?limit=10'
    pending.push(
      request(url + path, { dispatcher, headers: health ? {} : { 'x-api-key': READER_KEY } })
        .then(async (response) => {
          await response.body.arrayBuffer()
          reads.push({ sentAt, health, ms: performance.now() - sentAt, ok: response.statusCode === 200 })
        })
        .catch(() => {
          reads.push({ sentAt, health, ms: performance.now() - sentAt, ok: false })
        }),
    )
  }, READ_MS)
  return {
    async stop() {
      clearInterval(timer)
      await Promise.all(pending)
      await dispatcher.close()
      return reads
    },
  }
}

function summary(latencies: number[]): { p50: number; p99: number; max: number; count: number } {
  const sorted = latencies.toSorted((a, b) => a - b)
  return {
    p50: round(percentile(sorted, 50)),
    p99: round(percentile(sorted, 99)),
    max: round(sorted.at(-1) ?? Number.NaN),
    count: sorted.length,
  }
}

/** Records per second of inserting the bodies' records straight into a fresh SQLite table, in one transaction. */
function straightInserts(dataDir: string, bodies: string[], attempt: number): number {
  const file = join(dataDir, `baseline-${attempt}.sqlite`)
  const db = new DatabaseSync(file)
  try {
    db.exec('PRAGMA journal_mode = WAL')
    db.exec('PRAGMA synchronous = FULL')
    db.exec('CREATE TABLE records (id TEXT PRIMARY KEY, doc TEXT NOT NULL) WITHOUT ROWID')
    const insert = db.prepare('INSERT INTO records (id, doc) VALUES (?, ?)')
    const records = bodies.flatMap((body) => JSON.parse(body) as Array<Record<string, unknown>>)
    const started = performance.now()
    db.exec('BEGIN')
    for (const record of records) insert.run(String(record.deal_id), JSON.stringify(record))
    db.exec('COMMIT')
    return records.length / ((performance.now() - started) / 1000)
  } finally {
    db.close()
    rmSync(file, { force: true })
  }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-ingest-'))
  await seedCompanies(dataDir)
  const { child, url } = await startServer(dataDir)
  try {
    const batches = Array.from({ length: Math.ceil(RECORDS / BATCH) }, (_batch, batch) =>
      JSON.stringify(Array.from({ length: Math.min(BATCH, RECORDS - batch * BATCH) }, (_item, index) => deal(batch * BATCH + index))),
    )
    const megabytes = batches.reduce((sum, body) => sum + Buffer.byteLength(body), 0) / 2 ** 20
    const baselineBefore = straightInserts(dataDir, batches, 1)
    const latencies: number[] = []
    const imports: string[] = []
    let refused = 0
    const memoryBefore = memoryOf(child.pid!)
    let memoryPeak = memoryBefore.rss
    const sampler = setInterval(() => {
      memoryPeak = Math.max(memoryPeak, memoryOf(child.pid!).rss)
    }, 50)
    // The reader alone first: its latency with no import running is the baseline of the same run.
    const reader = startReader(url)
    await new Promise((done) => setTimeout(done, BASELINE_MS))
    const started = performance.now()

    let next = 0
    const poster = async () => {
      while (next < batches.length) {
        const body = batches[next++]
        for (;;) {
          const sent = performance.now()
          const reply = await json(`${url}/v1/tables/deals/records/bulk`, { method: 'POST', body })
          latencies.push(performance.now() - sent)
          if (reply.status === 429) {
            refused++
            await new Promise((done) => setTimeout(done, Number(reply.headers['retry-after'] ?? 1) * 1000))
            continue
          }
          if (reply.status !== 200) throw new Error(`POST answered ${reply.status}: ${JSON.stringify(reply.body)}`)
          imports.push(reply.body.import_id)
          break
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, batches.length) }, poster))
    const posted = performance.now()
    for (const id of imports) {
      for (;;) {
        const { body } = await json(`${url}/v1/imports/${id}`)
        if (body.data_import.status === 'finished') {
          if (body.data_import.error) throw new Error(`import ${id} finished with an error: ${JSON.stringify(body.data_import)}`)
          break
        }
        await new Promise((done) => setTimeout(done, POLL_MS))
      }
    }
    const finished = performance.now()
    const reads = await reader.stop()
    clearInterval(sampler)
    memoryPeak = Math.max(memoryPeak, memoryOf(child.pid!).peak)
    const count = await json(`${url}/v1/tables/deals/records?limit=0`)
    if (count.body.count !== RECORDS) throw new Error(`expected ${RECORDS} records in the table, found ${count.body.count}`)

    const straight = Math.max(baselineBefore, straightInserts(dataDir, batches, 2))
    const post = summary(latencies)
    const during = reads.filter((read) => read.sentAt >= started && read.sentAt < finished)
    const baseline = summary(reads.filter((read) => read.sentAt < started).map((read) => read.ms))
    const others = summary(during.map((read) => read.ms))
    const failures = during.filter((read) => !read.ok).length
    const seconds = (finished - started) / 1000
    const result = {
      records: RECORDS,
      batch: BATCH,
      calls: batches.length,
      concurrency: CONCURRENCY,
      megabytes_posted: round(megabytes),
      seconds_until_all_applied: round(seconds, 2),
      records_applied_per_second: Math.round(RECORDS / seconds),
      baseline_records_per_second: Math.round(straight),
      ours_over_baseline: round(straight / (RECORDS / seconds), 2),
      seconds_posting: round((posted - started) / 1000, 2),
      post_p50_ms: post.p50,
      post_p99_ms: post.p99,
      post_max_ms: post.max,
      posts_refused_429: refused,
      other_requests: others.count,
      other_p50_ms: others.p50,
      other_p99_ms: others.p99,
      other_max_ms: others.max,
      health_p99_ms: summary(during.filter((read) => read.health).map((read) => read.ms)).p99,
      other_company_p99_ms: summary(during.filter((read) => !read.health).map((read) => read.ms)).p99,
      other_failures: failures,
      baseline_p50_ms: baseline.p50,
      baseline_p99_ms: baseline.p99,
      other_p99_over_baseline: round(others.p99 / baseline.p99, 2),
      server_rss_before_mib: Math.round(memoryBefore.rss),
      server_rss_peak_mib: Math.round(memoryPeak),
    }
    console.log(
      `ingested ${RECORDS} records (${result.megabytes_posted} MB) in ${batches.length} calls of ${BATCH}, ${CONCURRENCY} at a time`,
    )
    console.log(
      `  applied: ${result.records_applied_per_second} records/s (${result.seconds_until_all_applied} s from the first POST to the last import finished); target >= 100000`,
    )
    console.log(
      `  baseline (the same records inserted straight into a fresh SQLite table, one transaction): ${result.baseline_records_per_second} records/s; ours/baseline ${result.ours_over_baseline}`,
    )
    console.log(
      `  POST latency: p50 ${post.p50} ms, p99 ${post.p99} ms, max ${post.max} ms; ${refused} answered 429 and were sent again; target p99 < 50 ms`,
    )
    console.log(
      `  other requests while importing (health and another company, one every ${READ_MS} ms): p50 ${others.p50} ms, p99 ${others.p99} ms, max ${others.max} ms` +
        ` (${others.count} requests, ${failures} not 200); target p99 < 100 ms`,
    )
    console.log(
      `  the same requests before the first POST (baseline, ${BASELINE_MS / 1000} s): p50 ${baseline.p50} ms, p99 ${baseline.p99} ms; p99 while importing / baseline: ${result.other_p99_over_baseline}`,
    )
    console.log(`  server memory: ${result.server_rss_before_mib} MiB before, ${result.server_rss_peak_mib} MiB at the peak`)
    console.log(JSON.stringify(result))
  } finally {
    child.kill('SIGTERM')
    await once(child, 'exit')
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
