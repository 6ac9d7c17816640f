import { describe, expect, it } from 'vitest'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import { enqueueImport } from '../src/imports/enqueue.ts'
import { ImportWorker } from '../src/imports/worker.ts'
import { randomOf } from './helpers/random.ts'
import { eachStoreWithWorker } from './helpers/store-with-worker.ts'

/**
 * Record imports against a model of what they mean: random calls to two tables (new records, partial updates, the
 * same record twice in a call, deletions, a deletion and the record sent again in one call, invalid records,
 * calls with nothing valid, `all=true`, debounce windows that join calls into one import), the worker running at
 * random moments. The tables must then hold what the model says: every call applied once, in the order it was
 * received, a table emptied once before the import whose calls asked `all=true`.
 */

const TABLES = ['deals', 'accounts'] as const
type TableKey = (typeof TABLES)[number]
type Item = Record<string, unknown>
type Rows = Map<string, Record<string, unknown>>

const table = (key: TableKey) => ({
  key,
  name: key,
  id_field: 'id',
  name_field: 'name',
  fields: [
    { api_key: 'id', name: 'Id', type: 'string' },
    { api_key: 'name', name: 'Name', type: 'string' },
    { api_key: 'stage', name: 'Stage', type: 'string' },
    { api_key: 'score', name: 'Score', type: 'number' },
  ],
})

/** The last word of a call on one record: its values (merged, when sent twice), or its deletion. */
interface Word {
  values: Record<string, unknown>
  deleted: boolean
  /** Deleted, then sent again in the same call: a record of its own, nothing kept of the stored one. */
  replaced: boolean
}

/** What one call asks, as the import engine reads it: the last word on each id. */
function lastWords(items: readonly Item[]): Map<string, Word> {
  const words = new Map<string, Word>()
  for (const item of items) {
    // The only invalid items sent: a score that is no number, which the engine skips.
    if (typeof item.score === 'string') continue
    const id = String(item.id)
    const previous = words.get(id)
    if (item.deleted === true) words.set(id, { values: {}, deleted: true, replaced: false })
    else if (previous && !previous.deleted) previous.values = { ...previous.values, ...item }
    else words.set(id, { values: { ...item }, deleted: false, replaced: previous?.deleted ?? false })
  }
  return words
}

/** The model: a table after one call (a call with nothing valid changes nothing). */
function applyCall(rows: Rows, items: readonly Item[]): void {
  for (const [id, word] of lastWords(items)) {
    if (word.deleted) rows.delete(id)
    else rows.set(id, { ...(word.replaced ? {} : rows.get(id)), ...word.values })
  }
}

interface SentCall {
  table: TableKey
  items: Item[]
  all: boolean
  importId: string
}

/** The model: the tables after every call, each import's calls in arrival order, `all=true` emptying first. */
function modelOf(calls: readonly SentCall[]): Record<TableKey, Rows> {
  const tables = { deals: new Map(), accounts: new Map() } as Record<TableKey, Rows>
  const imports = Map.groupBy(calls, (call) => call.importId)
  for (const importCalls of imports.values()) {
    for (const key of TABLES) {
      const ofTable = importCalls.filter((call) => call.table === key)
      const resync =
        ofTable.some((call) => call.all) && ofTable.some((call) => lastWords(call.items).size > 0 || (call.all && call.items.length === 0))
      if (resync) tables[key].clear()
    }
    for (const call of importCalls) applyCall(tables[call.table], call.items)
  }
  return tables
}

const each = eachStoreWithWorker('import-model-test')

describe('record imports against their model', () => {
  it.each([
    [1, 'one transaction each'],
    [2, 'one transaction each'],
    [3, 'one transaction each'],
    [4, 'steps of 6 items'],
    [5, 'steps of 6 items'],
    [6, 'steps of 6 items'],
  ])('hold what the model says after 80 random calls (seed %i, %s)', async (seed, runs) => {
    const { store } = each.test
    // A store that applies an import in steps of whole calls, as MongoDB does past its transaction budget.
    if (runs === 'steps of 6 items')
      each.worker = new ImportWorker({ store: { ...store, itemsPerTransaction: 6 }, clock: each.clock, owner: 'import-model-test' })
    const companyId = (
      await loadFixture(store, each.clock, {
        company: { name: 'Model' },
        users: [{ email: 'owner@model.example' }],
        data_tables: TABLES.map(table),
      })
    ).company_id
    const company = (await store.companies.get(companyId))!
    const random = randomOf(seed)
    const ids = Array.from({ length: 12 }, (_, index) => `R-${index}`)
    const anItem = (): Item => {
      const id = random.pick(ids)
      const roll = random.next()
      if (roll < 0.2) return { id, deleted: true }
      if (roll < 0.27) return { id, score: 'not a number' }
      if (roll < 0.5) return { id, stage: random.pick(['open', 'won', 'lost']) }
      return { id, name: `Record ${id} v${Math.floor(random.next() * 100)}`, score: Math.round(random.next() * 1000) }
    }

    const sent: SentCall[] = []
    for (let call = 0; call < 80; call++) {
      const key = random.pick(TABLES)
      const all = random.next() < 0.08
      const items = Array.from({ length: all && random.next() < 0.2 ? 0 : 1 + Math.floor(random.next() * 5) }, anItem)
      const debounceSeconds = random.next() < 0.3 ? random.pick([2, 5]) : undefined
      const receipt = await enqueueImport(store, each.clock, {
        company,
        target: 'records',
        table: (await store.dataTables.getByKey(companyId, 'live', key))!,
        items,
        bytes: JSON.stringify(items).length,
        queueLimitBytes: Number.MAX_SAFE_INTEGER,
        debounceSeconds,
        all,
      })
      sent.push({ table: key, items, all, importId: receipt.import_id })
      each.clock.advance(Math.floor(random.next() * 3_000))
      if (random.next() < 0.4) await each.worker.drain()
    }
    each.clock.advance(10_000)
    await each.worker.drain()

    const model = modelOf(sent)
    for (const key of TABLES) {
      const stored = await store.dataTables.getByKey(companyId, 'live', key)
      const records = await store.records.list(companyId, stored!.id, { offset: 0, limit: 1_000 })
      const held = Object.fromEntries(records.map((record) => [record.external_id, record.values]))
      expect({ table: key, held }).toEqual({ table: key, held: Object.fromEntries(model[key]) })
    }
    // The calls joined imports: the model's grouping was put to the test.
    expect(new Set(sent.map((call) => call.importId)).size).toBeLessThan(sent.length)
    expect(sent.some((call) => call.all)).toBe(true)
  })
})
