/**
 * The ingestion benchmark (`npm run bench:ingest`): starts the real server (`commission-api serve`, HTTP and
 * the import worker in one child process, on a fresh embedded store), posts BENCH_RECORDS deal records to
 * `POST /v1/tables/deals/records/bulk` in batches of BENCH_BATCH, one after the other, and polls each import
 * until it is finished. Prints the records applied per second (from the first POST until the last import is
 * finished) and the p50/p99 latency of the POST itself.
 *
 * Options (environment): BENCH_RECORDS (default 100000), BENCH_BATCH (default 5000).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { request } from 'undici'
import { systemClock } from '../src/clock.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import { sqliteFile } from '../src/store/open-store.ts'
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts'

const RECORDS = Number(process.env.BENCH_RECORDS ?? 100_000)
const BATCH = Number(process.env.BENCH_BATCH ?? 5000)
const API_KEY = 'cak_ingest-benchmark-key-not-secret'
const CLI = resolve(import.meta.dirname, '../src/cli.ts')
const POLL_MS = 20

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]

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

async function seedCompany(dataDir: string): Promise<void> {
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
  await store.close()
}

async function startServer(dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: { ...process.env, DATA_DIR: dataDir, PORT: '0', DEMO: 'off', LOG_LEVEL: 'warn', IMPORT_POLL_MS: '10', RATE_LIMIT_PER_SECOND: '100000' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let output = ''
  for (;;) {
    const [chunk] = (await once(child.stdout!, 'data')) as [Buffer]
    output += chunk.toString()
    const match = output.match(/listening on (http:\/\/\S+)/)
    if (match) return { child, url: match[1] }
  }
}

async function json(url: string, options: Parameters<typeof request>[1] = {}): Promise<{ status: number; body: any }> {
  const response = await request(url, { ...options, headers: { 'x-api-key': API_KEY, 'content-type': 'application/json', ...options.headers } })
  return { status: response.statusCode, body: await response.body.json() }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-ingest-'))
  await seedCompany(dataDir)
  const { child, url } = await startServer(dataDir)
  try {
    const batches = Array.from({ length: Math.ceil(RECORDS / BATCH) }, (_batch, batch) =>
      JSON.stringify(Array.from({ length: Math.min(BATCH, RECORDS - batch * BATCH) }, (_item, index) => deal(batch * BATCH + index))),
    )
    const latencies: number[] = []
    const imports: string[] = []
    const started = performance.now()
    for (const body of batches) {
      const sent = performance.now()
      const reply = await json(`${url}/v1/tables/deals/records/bulk`, { method: 'POST', body })
      latencies.push(performance.now() - sent)
      if (reply.status !== 200) throw new Error(`POST answered ${reply.status}: ${JSON.stringify(reply.body)}`)
      imports.push(reply.body.import_id)
    }
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
    const count = await json(`${url}/v1/tables/deals/records?limit=0`)
    if (count.body.count !== RECORDS) throw new Error(`expected ${RECORDS} records in the table, found ${count.body.count}`)

    const sorted = latencies.toSorted((a, b) => a - b)
    const seconds = (finished - started) / 1000
    const result = {
      records: RECORDS,
      batch: BATCH,
      calls: batches.length,
      seconds_until_all_applied: Number(seconds.toFixed(2)),
      records_applied_per_second: Math.round(RECORDS / seconds),
      seconds_posting: Number(((posted - started) / 1000).toFixed(2)),
      post_p50_ms: Number(percentile(sorted, 50).toFixed(1)),
      post_p99_ms: Number(percentile(sorted, 99).toFixed(1)),
      post_max_ms: Number(sorted.at(-1)!.toFixed(1)),
    }
    console.log(`ingested ${RECORDS} records in ${batches.length} calls of ${BATCH}`)
    console.log(`  applied: ${result.records_applied_per_second} records/s (${result.seconds_until_all_applied} s from the first POST to the last import finished)`)
    console.log(`  POST latency: p50 ${result.post_p50_ms} ms, p99 ${result.post_p99_ms} ms, max ${result.post_max_ms} ms`)
    console.log(JSON.stringify(result))
  } finally {
    child.kill('SIGTERM')
    await once(child, 'exit')
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
