import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runClaimedImport } from '../src/imports/run-import.ts'
import { ImportWorker } from '../src/imports/worker.ts'
import type { DataTable, DataTableRecord } from '../src/store/model.ts'
import type { Store } from '../src/store/port.ts'
import { pausingBeforeFinish } from './helpers/store-wrappers.ts'
import { aRecord } from './store/builders.ts'
import { gate } from './store/contract/support.ts'
import { type ImportHarness, startImportHarness } from './imports-support.ts'

// An import larger than one transaction of the store takes (`Store.itemsPerTransaction`: MongoDB ends a
// transaction after 60 s) is applied in several. These tests give the harness's store a budget of a few items,
// so that a few calls make a large import, on whichever store the run uses.

let h: ImportHarness
beforeEach(async () => {
  h = await startImportHarness()
})
afterEach(async () => {
  await h.close()
})

const LEASE = 60_000

/** The harness's store, taking at most `items` per transaction and counting its transactions. */
function withBudget(items: number, failAt?: number): { store: Store; transactions(): number } {
  let count = 0
  const store: Store = {
    ...h.store,
    itemsPerTransaction: items,
    transaction(work, options) {
      count++
      // A process that dies here: this transaction never commits, and the run stops.
      if (count === failAt) return Promise.reject(new Error('the worker died'))
      return h.store.transaction(work, options)
    },
  }
  return { store, transactions: () => count }
}

const putUsers = async (data: unknown[]) => {
  const reply = await h.call('/v1/users/bulk?debounce=10', { method: 'PUT', body: { data } })
  expect(reply.status).toBe(200)
  return reply.body.import_id as string
}
const postDeals = async (records: unknown[], query = '') => {
  const reply = await h.call(`/v1/tables/deals/records/bulk?debounce=10${query}`, { method: 'POST', body: records })
  expect(reply.status).toBe(200)
  return reply.body.import_id as string
}
const deal = (id: string, name = `Deal ${id}`) => ({ deal_id: id, deal_name: name })

async function deals(): Promise<{ table: DataTable; records: DataTableRecord[] }> {
  const table = (await h.store.dataTables.getByKey(h.companyId, 'live', 'deals'))!
  return { table, records: await h.store.records.list(h.companyId, table.id, { offset: 0, limit: 1000 }) }
}

const byExternalId = (records: DataTableRecord[]) => new Map(records.map((record) => [record.external_id, record]))

describe('an import larger than one transaction', () => {
  it('is applied in steps of whole calls, one transaction each, every call once', async () => {
    const id = await putUsers([{ email: 'a@acme.example' }, { email: 'b@acme.example' }])
    await putUsers([{ email: 'c@acme.example' }, { email: 'd@acme.example' }])
    await putUsers([{ email: 'e@acme.example', name: 'E' }])
    h.server.clock.advance(10_000)
    const small = withBudget(3)
    expect(await new ImportWorker({ store: small.store, clock: h.server.clock }).drain()).toBe(1)
    // [a, b] then [c, d, e]: a call is never split, and a step takes calls while they fit.
    expect(small.transactions()).toBe(2)
    const result = await h.importOf(id)
    expect(result).toMatchObject({ status: 'finished', error: false })
    expect(result.data_tables_details.map((detail: any) => [detail.number_of_records, detail.error])).toStrictEqual([
      [2, null],
      [2, null],
      [1, null],
    ])
    for (const email of ['a', 'b', 'c', 'd']) expect(await h.user(`${email}@acme.example`)).toBeDefined()
    expect((await h.user('e@acme.example'))?.name).toBe('E')
    expect(await h.store.imports.get(h.companyId, id)).not.toHaveProperty('payloads_applied')
  })

  it('goes on after the last step committed when its run stops midway, applying no call twice', async () => {
    const id = await postDeals([deal('N-1'), deal('N-1b')], '&all=true')
    await postDeals([deal('N-2'), deal('N-2b')])
    await postDeals([deal('N-3')])
    h.server.clock.advance(10_000)
    const claimed = (await h.store.imports.claimNext(
      'doomed',
      h.server.clock.now().toISOString(),
      new Date(h.server.clock.now().getTime() + LEASE).toISOString(),
    ))!
    expect(claimed.id).toBe(id)

    // One call per step (the table's 2 records fit one, so it is emptied by the first): the first step (the
    // resync and N-1) commits, and the worker dies in the second.
    await expect(runClaimedImport(withBudget(2, 2).store, h.server.clock, claimed, 'doomed')).rejects.toThrow('the worker died')
    const midway = await h.store.imports.get(h.companyId, id)
    expect(midway).toMatchObject({ status: 'started', payloads_applied: 1 })
    const afterFirst = byExternalId((await deals()).records)
    expect([...afterFirst.keys()].toSorted()).toStrictEqual(['N-1', 'N-1b'])

    // Another worker takes it over once the lease expired, with a store that takes the rest in one go.
    h.server.clock.advance(LEASE)
    expect(await h.drain()).toBe(1)
    const result = await h.importOf(id)
    expect(result).toMatchObject({ status: 'finished', error: false })
    expect(result.data_tables_details).toHaveLength(3)
    const final = byExternalId((await deals()).records)
    expect([...final.keys()].toSorted()).toStrictEqual(['N-1', 'N-1b', 'N-2', 'N-2b', 'N-3'])
    // N-1 was not imported again: the resync that would have given it a new id ran once.
    expect(final.get('N-1')).toStrictEqual(afterFirst.get('N-1'))
    expect((await h.store.imports.get(h.companyId, id))?.attempts).toBe(2)
  })

  it('is handed back between two steps when its worker stops, and another worker goes on after the committed step at once', async () => {
    const id = await putUsers([{ email: 'a@acme.example' }, { email: 'b@acme.example' }])
    await putUsers([{ email: 'c@acme.example' }, { email: 'd@acme.example' }])
    h.server.clock.advance(10_000)
    // Two steps of one call each; the worker is stopped once the first has committed.
    const small = withBudget(2)
    const committed = gate()
    const goOn = gate()
    const pausing: Store = {
      ...small.store,
      async transaction(work, options) {
        const result = await small.store.transaction(work, options)
        committed.open()
        await goOn.promise
        return result
      },
    }
    const leaving = new ImportWorker({ store: pausing, clock: h.server.clock, owner: 'leaving', pollMs: 10 })
    leaving.start()
    await committed.promise
    const stopping = leaving.stop()
    goOn.open()
    await stopping
    expect(small.transactions()).toBe(1)
    expect(await h.store.imports.get(h.companyId, id)).toMatchObject({
      status: 'scheduled',
      lease_owner: null,
      payloads_applied: 1,
      attempts: 1,
    })

    // Without waiting for the lease, another worker applies the second call only.
    expect(await h.drain()).toBe(1)
    const result = await h.importOf(id)
    expect(result).toMatchObject({ status: 'finished', error: false })
    expect(result.data_tables_details.map((detail: any) => detail.number_of_records)).toStrictEqual([2, 2])
    for (const email of ['a', 'b', 'c', 'd']) expect(await h.user(`${email}@acme.example`)).toBeDefined()
    expect((await h.store.imports.get(h.companyId, id))?.attempts).toBe(2)
  })

  it('keeps the outcome of the calls its steps applied when a later step fails on a fault of ours', async () => {
    const id = await putUsers([{ email: 'a@acme.example' }])
    await putUsers([{ email: 'b@acme.example' }])
    h.server.clock.advance(10_000)
    const failing = new ImportWorker({
      store: pausingBeforeFinish(withBudget(1).store, async () => {
        throw new Error('disk on fire')
      }),
      clock: h.server.clock,
    })
    expect(await failing.drain()).toBe(1)
    const result = await h.importOf(id)
    expect(result).toMatchObject({ status: 'finished', error: true })
    expect(result.data_tables_details[0].error).toBeNull()
    expect(result.data_tables_details[1].error).toMatchObject({
      title: 'ValidationError',
      description: expect.stringContaining('internal error'),
    })
    expect(await h.user('a@acme.example')).toBeDefined()
    expect(await h.user('b@acme.example')).toBeUndefined()
  })
})

/** Replaces the deals table's records by `count` old ones, with the given manual overrides. */
async function fillDeals(count: number, overridden: Record<string, Record<string, unknown>> = {}): Promise<DataTable> {
  const { table } = await deals()
  await h.store.records.deleteAll(h.companyId, table.id)
  const records = Array.from({ length: count }, (_, index) => {
    const externalId = `O-${index}`
    return aRecord(h.companyId, table.id, {
      external_id: externalId,
      values: { deal_id: externalId, deal_name: 'old' },
      overrides: overridden[externalId] ?? {},
    })
  })
  await h.store.records.saveMany(h.companyId, records)
  return table
}

describe('an all=true import over a table larger than one transaction', () => {
  it('empties it batch by batch before the first call, then applies the calls', async () => {
    await fillDeals(5, { 'O-4': { deal_name: 'by hand' } })
    const id = await postDeals([deal('O-4', 'sent again'), deal('N-1')], '&all=true')
    h.server.clock.advance(10_000)
    const small = withBudget(2)
    expect(await new ImportWorker({ store: small.store, clock: h.server.clock }).drain()).toBe(1)
    // Three batches (2 + 2 + none left without an override), then the one step, which deletes the rest.
    expect(small.transactions()).toBe(4)
    expect((await h.importOf(id)).error).toBe(false)
    const final = byExternalId((await deals()).records)
    expect([...final.keys()].toSorted()).toStrictEqual(['N-1', 'O-4'])
    expect(final.get('O-4')).toMatchObject({ values: { deal_id: 'O-4', deal_name: 'sent again' }, overrides: {} })
  })

  it('brings the overrides of the records sent again back when the call keeps them', async () => {
    const table = await fillDeals(5, { 'O-4': { deal_name: 'by hand' } })
    const before = (await h.store.records.findByExternalIds(h.companyId, table.id, ['O-4'])).get('O-4')!.id
    const id = await postDeals([deal('O-4', 'sent again'), deal('N-1')], '&all=true&keep_overrides=true')
    await postDeals([deal('N-2')])
    h.server.clock.advance(10_000)
    expect(await new ImportWorker({ store: withBudget(2).store, clock: h.server.clock }).drain()).toBe(1)
    expect((await h.importOf(id)).error).toBe(false)
    const final = byExternalId((await deals()).records)
    expect([...final.keys()].toSorted()).toStrictEqual(['N-1', 'N-2', 'O-4'])
    expect(final.get('O-4')).toMatchObject({ values: { deal_id: 'O-4', deal_name: 'sent again' }, overrides: { deal_name: 'by hand' } })
    // Sent again, it is the same record: its id stays, and so do the ids of its commission lines.
    expect(final.get('O-4')?.id).toBe(before)
  })
})
