/**
 * The reset benchmark (`npm run bench:reset`): how long `POST /admin/companies/{id}/reset` takes for the default
 * demo company (25 users, 12 months, 600 deals, two plans), on an in-memory store (as `--test-mode` runs) and on
 * a SQLite file, as the real server answers it over HTTP. The baseline, measured in the same run, is the first
 * load of the same fixture (`POST /admin/companies`), which a reset repeats with the load's ids.
 *
 * Target (issue "A stand-in integrators can drive from their own tests"): under one second. Figures:
 * docs/performance.md. BENCH_ROUNDS (default 20) resets per store; medians and the slowest are printed.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request } from 'undici'
import { loadConfig } from '../src/config.ts'
import { demoFixture } from '../src/fixtures/demo.ts'
import { startServer } from '../src/server.ts'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20)
const TOKEN = 'bench-reset-admin-token-0123456789'

const median = (values: number[]) => values.toSorted((a, b) => a - b)[Math.floor(values.length / 2)]

async function timed(url: string, path: string, body?: unknown): Promise<{ ms: number; answer: unknown }> {
  const started = performance.now()
  const response = await request(url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const answer = await response.body.json()
  if (response.statusCode >= 300) throw new Error(`${path}: ${response.statusCode} ${JSON.stringify(answer)}`)
  return { ms: performance.now() - started, answer }
}

async function measure(label: string, dataDir: string): Promise<void> {
  const config = loadConfig({ PORT: '0', LOG_LEVEL: 'silent', DEMO: 'off', ADMIN_TOKEN: TOKEN, DATA_DIR: dataDir, IMPORT_WORKER: 'inline' })
  const server = await startServer(config, { out: { write: () => true } as unknown as NodeJS.WritableStream })
  try {
    const load = await timed(server.url, '/admin/companies', demoFixture())
    const companyId = (load.answer as { company_id: string }).company_id
    const resets: number[] = []
    for (let round = 0; round < ROUNDS; round++) resets.push((await timed(server.url, `/admin/companies/${companyId}/reset`)).ms)
    const middle = median(resets)
    console.log(
      `${label.padEnd(14)} load ${load.ms.toFixed(0).padStart(5)} ms   reset median ${middle.toFixed(0).padStart(5)} ms, slowest ${Math.max(
        ...resets,
      )
        .toFixed(0)
        .padStart(5)} ms   (reset / load: ${(middle / load.ms).toFixed(2)})`,
    )
  } finally {
    await server.close()
  }
}

const directory = mkdtempSync(join(tmpdir(), 'bench-reset-'))
try {
  console.log(`Reset of the default demo company over HTTP, ${ROUNDS} rounds each:`)
  await measure('in memory', ':memory:')
  await measure('SQLite file', directory)
} finally {
  rmSync(directory, { recursive: true, force: true })
}
