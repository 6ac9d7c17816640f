import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ManualClock } from '../src/clock.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import { enqueueImport, type ImportRequest } from '../src/imports/enqueue.ts'
import { getImportView, type ImportView } from '../src/imports/import-view.ts'
import { ImportWorker } from '../src/imports/worker.ts'
import { type Company, type DataTable, IMPORT_DEADLINES_AHEAD_MS, latestImportDeadline } from '../src/store/model.ts'
import { MAX_DEBOUNCE_SECONDS } from '../src/imports/limits.ts'
import { MAX_IMPORT_LEASE_MS } from '../src/config.ts'
import type { Store } from '../src/store/port.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { openTestStore, type TestStore } from './helpers/test-store.ts'

// The import rules without HTTP: calls are enqueued as the routes enqueue them and run by a worker on the same
// store and clock. The routes' own behaviour (status codes, bodies) is proven by the v1-writes-* HTTP tests.

let opened: TestStore
let store: Store
let clock: ManualClock
let worker: ImportWorker
let company: Company
let deals: DataTable

beforeEach(async () => {
  opened = await openTestStore()
  store = opened.store
  clock = new ManualClock('2026-06-01T00:00:00.000Z')
  const loaded = await loadFixture(store, clock, smallFixture())
  company = (await store.companies.get(loaded.company_id))!
  deals = (await store.dataTables.getByKey(company.id, 'live', 'deals'))!
  worker = new ImportWorker({ store, clock, owner: 'rules-worker' })
})
afterEach(async () => {
  await worker.stop()
  await opened.dispose()
})

type Call = Pick<ImportRequest, 'target' | 'items'> & Partial<ImportRequest>

function enqueue(call: Call): Promise<{ import_id: string }> {
  return enqueueImport(store, clock, { company, bytes: 100, queueLimitBytes: 1 << 20, ...call })
}

async function runAndView(importId: string): Promise<ImportView> {
  await worker.drain()
  return getImportView(store, company.id, importId)
}

const recordCall = (items: unknown[], options: Partial<ImportRequest> = {}): Call => ({
  target: 'records',
  table: deals,
  items,
  ...options,
})

async function dealIds(): Promise<string[]> {
  const records = await store.records.list(company.id, deals.id, { offset: 0, limit: 100 })
  return records.map((record) => String(record.values.deal_id)).toSorted()
}

describe('user calls', () => {
  it('refuse the whole call for one invalid item: nothing is written', async () => {
    const { import_id } = await enqueue({
      target: 'users',
      items: [
        { email: 'new@acme.example', name: 'New' },
        { email: 'bad@acme.example', currency: 'euros' },
      ],
    })
    const view = await runAndView(import_id)
    expect(view).toMatchObject({ status: 'finished', error: true })
    expect(view.data_tables_details[0].error?.title).toBe('ValidationError')
    expect((await store.users.findByEmails(company.id, ['new@acme.example'])).size).toBe(0)
  })

  it('skip a repeated email alone and apply the others', async () => {
    const { import_id } = await enqueue({
      target: 'users',
      items: [
        { email: 'one@acme.example', name: 'One' },
        { email: 'ONE@acme.example', name: 'Again' },
        { email: 'two@acme.example', name: 'Two' },
      ],
    })
    const view = await runAndView(import_id)
    expect(view.data_tables_details[0].error?.title).toBe('PartialFailure')
    const found = await store.users.findByEmails(company.id, ['one@acme.example', 'two@acme.example'])
    expect([...found.values()].map((user) => user.name).toSorted()).toStrictEqual(['One', 'Two'])
  })
})

describe('record calls', () => {
  it('apply a record with keys the table does not know, naming the ignored keys once, without an error', async () => {
    const { import_id } = await enqueue(
      recordCall([
        { deal_id: 'D-9', deal_name: 'Ninth', crm_stage: 'won' },
        { deal_id: 'D-10', deal_name: 'Tenth', crm_stage: 'lost', crm_owner: 'x' },
      ]),
    )
    const view = await runAndView(import_id)
    expect(view.error).toBe(false)
    expect(view.data_tables_details[0]).toMatchObject({ error: null, number_of_records: 2 })
    expect([...view.data_tables_details[0].ignored_keys].toSorted()).toStrictEqual(['crm_owner', 'crm_stage'])
    expect(await dealIds()).toStrictEqual(['D-1', 'D-10', 'D-2', 'D-9'])
  })

  it('skip a record without its id field and report it, applying the others', async () => {
    const { import_id } = await enqueue(recordCall([{ deal_name: 'No id' }, { deal_id: 'D-3', deal_name: 'Third' }]))
    const view = await runAndView(import_id)
    expect(view.data_tables_details[0].error?.title).toBe('PartialFailure')
    expect(await dealIds()).toStrictEqual(['D-1', 'D-2', 'D-3'])
  })

  it('with all=true empty the table before applying the call', async () => {
    const { import_id } = await enqueue(recordCall([{ deal_id: 'D-7', deal_name: 'Seventh' }], { all: true }))
    expect((await runAndView(import_id)).error).toBe(false)
    expect(await dealIds()).toStrictEqual(['D-7'])
  })
})

describe('debounce windows', () => {
  it('join the calls of one window into one import, which runs only once the window has closed', async () => {
    const first = await enqueue(recordCall([{ deal_id: 'D-4', deal_name: 'Fourth' }], { debounceSeconds: 300 }))
    clock.advance(299_000)
    const second = await enqueue(recordCall([{ deal_id: 'D-5', deal_name: 'Fifth' }], { debounceSeconds: 300 }))
    expect(second.import_id).toBe(first.import_id)

    expect(await worker.drain()).toBe(0)
    expect((await getImportView(store, company.id, first.import_id)).status).toBe('scheduled')

    clock.advance(1_000)
    const view = await runAndView(first.import_id)
    expect(view.status).toBe('finished')
    expect(view.data_tables_details).toHaveLength(2)
    expect(await dealIds()).toStrictEqual(['D-1', 'D-2', 'D-4', 'D-5'])
  })

  it('start a new import for a call after the window has closed', async () => {
    const first = await enqueue(recordCall([{ deal_id: 'D-4', deal_name: 'Fourth' }], { debounceSeconds: 60 }))
    clock.advance(60_000)
    const second = await enqueue(recordCall([{ deal_id: 'D-5', deal_name: 'Fifth' }], { debounceSeconds: 60 }))
    expect(second.import_id).not.toBe(first.import_id)
  })
})

describe('the deadlines of imports', () => {
  it('takes a window or a lease as made by a clock ahead only past the longest debounce and lease, with an hour for clocks', () => {
    const hour = 60 * 60 * 1000
    expect(MAX_DEBOUNCE_SECONDS * 1000 + hour).toBeLessThanOrEqual(IMPORT_DEADLINES_AHEAD_MS)
    expect(MAX_IMPORT_LEASE_MS + hour).toBeLessThanOrEqual(IMPORT_DEADLINES_AHEAD_MS)
    expect(latestImportDeadline('2026-01-01T00:00:00.000Z')).toBe('2026-01-02T01:00:00.000Z')
    // Never past what a date writes: a later instant would be written +010000-…, which sorts before every other.
    expect(latestImportDeadline('9999-12-31T12:00:00.000Z')).toBe('9999-12-31T23:59:59.999Z')
  })
})
