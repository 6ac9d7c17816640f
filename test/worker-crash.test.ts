import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { Writable } from 'node:stream'
import { afterEach, describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config.ts'
import { ImportWorker } from '../src/imports/worker.ts'
import { type RunningServer, startServer } from '../src/server.ts'
import type { DataTableRecord } from '../src/store/model.ts'
import type { Store } from '../src/store/port.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { CLI, runCli, tempDataDir } from './helpers/process.ts'
import { call, startTestServer } from './helpers/server.ts'
import { childEnvironment, onMongo, runEnvironment } from './helpers/test-store.ts'

const CRASH_WORKER = resolve(import.meta.dirname, 'helpers/crash-worker.ts')

interface Child {
  process: ChildProcess
  /** Resolves with the first stdout match, waiting for more output as needed. */
  waitFor(pattern: RegExp): Promise<RegExpMatchArray>
}

const children: ChildProcess[] = []

function startChild(args: string[], env: Record<string, string>): Child {
  const child = spawn(process.execPath, args, { env: childEnvironment(process.env, env), stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk) => (stdout += chunk.toString()))
  child.stderr!.on('data', (chunk) => (stderr += chunk.toString()))
  return {
    process: child,
    async waitFor(pattern) {
      for (;;) {
        const match = stdout.match(pattern)
        if (match) return match
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(`child exited before printing ${pattern}:\n${stdout}\n${stderr}`)
        await Promise.race([once(child.stdout!, 'data'), once(child, 'exit')])
      }
    },
  }
}

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await once(child, 'exit')
    }
  }
})

const quiet = () => new Writable({ write: (_chunk, _encoding, done) => done() })

/** A resync of the deals table: every old record goes (all=true) and these 3,000 come in. */
const RESYNC = Array.from({ length: 3000 }, (_, index) => ({
  deal_id: `N-${index}`,
  deal_name: `Deal ${index}`,
  amount: index * 10,
  amount_currency: index % 2 ? 'EUR' : 'USD',
  deal_types: 'new;upsell',
}))

/** Calls to a second table, in the same debounce window: the import stacks both tables. */
const LEADS = Array.from({ length: 500 }, (_, index) => ({ lead_id: `L-${index}`, title: `Lead ${index}` }))

/** The small company, with a second live table for the stacked call. */
function fixture() {
  const company = smallFixture()
  company.data_tables!.push({
    key: 'leads',
    name: 'Leads',
    id_field: 'lead_id',
    name_field: 'title',
    fields: [
      { api_key: 'lead_id', name: 'Id', type: 'string' },
      { api_key: 'title', name: 'Title', type: 'string' },
    ],
    records: [{ lead_id: 'L-old', title: 'Kept' }],
  })
  return company
}

type Content = Record<string, Pick<DataTableRecord, 'external_id' | 'values' | 'overrides'>[]>

/** What the two tables hold, without the ids and times a run stamps. */
async function contentOf(store: Store, companyId: string): Promise<Content> {
  const content: Content = {}
  for (const key of ['deals', 'leads']) {
    const table = (await store.dataTables.getByKey(companyId, 'live', key))!
    const records = await store.records.list(companyId, table.id, { offset: 0, limit: 10_000 })
    content[key] = records
      .map(({ external_id, values, overrides }) => ({ external_id, values, overrides }))
      .toSorted((a, b) => a.external_id.localeCompare(b.external_id))
  }
  return content
}

/** The same import, run once without any crash, on a fresh store. */
async function singleRun(): Promise<Content> {
  const server = await startTestServer({ RATE_LIMIT_PER_SECOND: '1000000' })
  try {
    const { companyId, apiKey } = await server.load(fixture())
    const reply = await server.call('/v1/tables/deals/records/bulk?all=true&debounce=1', { method: 'POST', key: apiKey, body: RESYNC })
    expect(reply.status).toBe(200)
    const stacked = await server.call('/v1/tables/leads/records/bulk', { method: 'POST', key: apiKey, body: LEADS })
    expect(stacked.body.import_id).toBe(reply.body.import_id)
    server.clock.advance(1000)
    expect(await new ImportWorker({ store: server.store, clock: server.clock }).drain()).toBe(1)
    return await contentOf(server.store, companyId)
  } finally {
    await server.close()
  }
}

describe('a worker killed in the middle of an import', () => {
  let api: RunningServer | null = null
  afterEach(async () => {
    await api?.close()
    api = null
  })

  // On MongoDB the killed worker's transaction stays open on the server until the server's transaction lifetime
  // (60 s by default) ends it; until then the restarted worker's claim conflicts with it and is tried again.
  const timeout = onMongo ? 180_000 : 20_000

  it(
    'leaves nothing applied, and the import (stacked over two tables) is run again after restart with the result of a single run',
    { timeout },
    async () => {
      const dataDir = tempDataDir()
      const fixtureFile = join(dataDir, 'fixture.json')
      writeFileSync(fixtureFile, JSON.stringify(fixture()))
      const loaded = runCli(['load', fixtureFile, '--json'], { DATA_DIR: dataDir })
      expect(loaded.code).toBe(0)
      const { company_id: companyId, api_key: key } = JSON.parse(loaded.stdout)
      const env = { DATA_DIR: dataDir, DEMO: 'off', LOG_LEVEL: 'info', IMPORT_POLL_MS: '20', IMPORT_LEASE_MS: '1000' }

      // The API alone, in this process; the worker in a child that will die.
      api = await startServer(loadConfig(runEnvironment({ ...env, PORT: '0', LOG_LEVEL: 'silent', RATE_LIMIT_PER_SECOND: '1000' })), {
        role: 'api',
        out: quiet(),
        logStream: quiet(),
      })
      const before = await contentOf(api.store, companyId)
      expect(before.deals.map((record) => record.external_id)).toStrictEqual(['D-1', 'D-2'])
      const reply = await call(`${api.url}/v1/tables/deals/records/bulk?all=true&debounce=1`, { method: 'POST', key, body: RESYNC })
      expect(reply.status).toBe(200)
      const importId: string = reply.body.import_id
      const stacked = await call(`${api.url}/v1/tables/leads/records/bulk`, { method: 'POST', key, body: LEADS })
      expect(stacked.body.import_id).toBe(importId)

      const doomed = startChild([CRASH_WORKER], env)
      const [, pausedId, owner] = await doomed.waitFor(/paused mid-import (\w+) by (\S+)/)
      expect(pausedId).toBe(importId)
      // Mid-import: the run has deleted and written everything, uncommitted. Nobody else sees any of it.
      expect(await api.store.imports.get(companyId, importId)).toMatchObject({ status: 'started', lease_owner: owner, attempts: 1 })
      expect(await contentOf(api.store, companyId)).toStrictEqual(before)

      doomed.process.kill('SIGKILL')
      await once(doomed.process, 'exit')
      expect(doomed.process.signalCode).toBe('SIGKILL')
      expect(await contentOf(api.store, companyId)).toStrictEqual(before)
      expect((await api.store.imports.get(companyId, importId))?.status).toBe('started')

      // The restarted worker (the real CLI) takes the import over once the dead worker's lease expires.
      const restarted = startChild([CLI, 'serve', '--role', 'worker'], env)
      await restarted.waitFor(new RegExp(`"import_id":"${importId}"[^\\n]*"msg":"import finished"`))
      const view = await call(`${api.url}/v1/imports/${importId}`, { key })
      expect(view.body).toMatchObject({
        data_import: {
          id: importId,
          status: 'finished',
          error: false,
          data_tables_details: [
            { data_table_key: 'deals', number_of_records: 3000, error: null },
            { data_table_key: 'leads', number_of_records: 500, error: null },
          ],
        },
      })
      expect((await api.store.imports.get(companyId, importId))?.attempts).toBe(2)

      const recovered = await contentOf(api.store, companyId)
      expect(recovered.deals).toHaveLength(3000)
      expect(recovered.leads).toHaveLength(501)
      expect(recovered).toStrictEqual(await singleRun())
      restarted.process.kill('SIGTERM')
      const [code] = await once(restarted.process, 'exit')
      expect(code).toBe(0)
    },
  )
})
