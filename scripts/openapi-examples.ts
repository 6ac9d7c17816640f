/**
 * Writes src/routes/openapi-examples.json: an example of each public operation's answer (and of the upserts'
 * bodies), taken from a small demo company served by the real application. `GET /openapi.json` shows them.
 * Run with `npm run docs:openapi-examples` after changing what a route answers.
 */
import { writeFileSync } from 'node:fs'
import { buildApp } from '../src/app.ts'
import type { DataStructure, ImportReceipt, Page, TableRecord } from '../src/client/index.ts'
import { ManualClock } from '../src/clock.ts'
import { loadConfig } from '../src/config.ts'
import { demoFixture } from '../src/fixtures/demo.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import { ImportWorker } from '../src/imports/worker.ts'
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts'

const OUT = new URL('../src/routes/openapi-examples.json', import.meta.url)
const ROWS = 2

const store = openSqliteStore(':memory:')
const clock = new ManualClock('2026-01-15T09:00:00.000Z')
const app = await buildApp({ config: loadConfig({ DEMO: 'off', LOG_LEVEL: 'silent', PUBLIC_URL: 'http://127.0.0.1:3000' }), store, clock })
const {
  api_keys: [key],
  company_id: companyId,
} = await loadFixture(store, clock, demoFixture({ users: 6, months: 2, deals: 10, seed: 'openapi' }))

async function call<T = unknown>(method: 'GET' | 'PUT' | 'POST', url: string, body?: unknown): Promise<T> {
  const reply = await app.inject({ method, url, headers: { 'x-api-key': key }, ...(body === undefined ? {} : { payload: body as object }) })
  if (reply.statusCode !== 200) throw new Error(`${method} ${url} answered ${reply.statusCode}: ${reply.body}`)
  return reply.json() as T
}

/** A page cut to its first rows, with a meta that still says more follow. */
const shortened = (page: Page<unknown>) => ({ ...page, data: page.data.slice(0, ROWS) })

const structures = (await call<{ data: DataStructure[] }>('GET', '/v2/data-structures')).data
const byType = (type: string) => structures.find((structure) => structure.type === type)!
const statements = byType('statement_reporting')
const records = byType('record_reporting')
const quota = byType('quota')
const table = (await store.dataTables.list(companyId)).find((candidate) => candidate.environment === 'live')!

const users = [{ email: 'new.hire@demo.example', name: 'New Hire', role: 'Account Executive', currency: 'EUR', arrival_date: '2026-01-05' }]
const [record] = (await call<{ data: TableRecord[] }>('GET', `/v1/tables/${table.key}/records?limit=1`)).data
const receipt = await call<ImportReceipt>('PUT', '/v1/users/bulk', { data: users })
await new ImportWorker({ store, clock, owner: 'examples' }).drain()

const examples = {
  listDataStructures: { response: { data: structures.slice(0, 3) } },
  getFields: { response: await call('GET', `/v2/data-structures/${statements.id}/fields`) },
  getStatements: { response: shortened(await call<Page<unknown>>('GET', `/v2/reporting/${statements.id}/statements?limit=${ROWS}`)) },
  getRecords: { response: shortened(await call<Page<unknown>>('GET', `/v2/reporting/${records.id}/records?limit=${ROWS}`)) },
  getQuotaValues: { response: shortened(await call<Page<unknown>>('GET', `/v2/quotas/${quota.id}/values?limit=${ROWS}`)) },
  listUsers: { response: await call('GET', `/v1/users?limit=${ROWS}`) },
  listTableRecords: { response: await call('GET', `/v1/tables/${table.key}/records?limit=${ROWS}`) },
  listReportingStatements: { response: await call('GET', `/v1/reporting?limit=${ROWS}`) },
  listReportingRecords: { response: await call('GET', `/v1/reporting/${table.id}/records?limit=${ROWS}`) },
  upsertUsers: { request: { data: users }, response: receipt },
  upsertTableRecords: { request: [{ ...record }], response: { import_id: receipt.import_id, objects_imported: 1 } },
  getImport: { response: await call('GET', `/v1/imports/${receipt.import_id}`) },
}

writeFileSync(OUT, `${JSON.stringify(examples, null, 2)}\n`)
await app.close()
await store.close()
console.log(`wrote ${OUT.pathname}`)
