import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { smallFixture } from './helpers/fixtures.ts'
import { type ImportHarness, startImportHarness } from './imports-support.ts'

let h: ImportHarness
beforeEach(async () => {
  h = await startImportHarness()
})
afterEach(async () => {
  await h.close()
})

const putUsers = async (data: unknown[], query = '') => {
  const reply = await h.call(`/v1/users/bulk${query}`, { method: 'PUT', body: { data } })
  expect(reply.status).toBe(200)
  return reply.body.import_id as string
}
const postRecords = async (key: string, records: unknown[], query = '') => {
  const reply = await h.call(`/v1/tables/${key}/records/bulk${query}`, { method: 'POST', body: records })
  expect(reply.status).toBe(200)
  return reply.body.import_id as string
}

describe('debounce', () => {
  it('holds the import open from the first call: calls inside the window join it, later calls do not extend it', async () => {
    const first = await putUsers([{ email: 'a@acme.example' }], '?debounce=60')
    h.server.clock.advance(30_000)
    expect(await putUsers([{ email: 'b@acme.example' }], '?debounce=60')).toBe(first)
    h.server.clock.advance(29_999)
    expect(await putUsers([{ email: 'c@acme.example' }])).toBe(first)
    // Still inside the window: the worker leaves it alone.
    expect(await h.drain()).toBe(0)
    expect((await h.importOf(first)).status).toBe('scheduled')

    h.server.clock.advance(1)
    const next = await putUsers([{ email: 'd@acme.example' }], '?debounce=60')
    expect(next).not.toBe(first)
    expect(await h.drain()).toBe(1)
    const result = await h.importOf(first)
    expect(result).toMatchObject({ status: 'finished', error: false, launched_at: '2026-06-01T00:01:00.000Z' })
    expect(result.data_tables_details.map((detail: any) => detail.number_of_records)).toStrictEqual([1, 1, 1])
    for (const email of ['a', 'b', 'c']) expect(await h.user(`${email}@acme.example`)).toBeDefined()
    expect(await h.user('d@acme.example')).toBeUndefined()
    expect((await h.importOf(next)).status).toBe('scheduled')
  })

  it('validates each joined payload on its own: a refused one upserts nothing, the others are applied', async () => {
    const id = await putUsers([{ email: 'a@acme.example', name: 'A' }], '?debounce=10')
    await putUsers([{ email: 'b@acme.example' }, { email: 'bad@acme.example', currency: 'nope' }], '?debounce=10')
    await putUsers([{ email: 'c@acme.example' }, { email: 'c@acme.example' }], '?debounce=10')
    h.server.clock.advance(10_000)
    expect(await h.drain()).toBe(1)
    const result = await h.importOf(id)
    expect(result.error).toBe(true)
    // number_of_records: the items applied; null for the refused call.
    expect(result.data_tables_details.map((detail: any) => [detail.number_of_records, detail.error?.title ?? null])).toStrictEqual([
      [1, null],
      [null, 'ValidationError'],
      [1, 'PartialFailure'],
    ])
    expect(result.data_tables_details[1].error.parsing_error_details).toMatchObject([
      { line_number: 2, row: { email: 'bad@acme.example' } },
    ])
    expect(await h.user('a@acme.example')).toBeDefined()
    expect(await h.user('b@acme.example')).toBeUndefined()
    expect(await h.user('c@acme.example')).toBeDefined()
  })

  it('lets a payload see the users of the payloads before it in the same import', async () => {
    const id = await putUsers([{ email: 'a@acme.example', name: 'First' }], '?debounce=5')
    await putUsers([{ email: 'a@acme.example', role: 'sales' }], '?debounce=5')
    h.server.clock.advance(5000)
    await h.drain()
    expect((await h.importOf(id)).error).toBe(false)
    expect(await h.user('a@acme.example')).toMatchObject({ name: 'First', role: 'sales' })
  })

  it('stacks record calls of one company across tables; users and other companies keep their own imports', async () => {
    const table = await h.store.dataTables.getByKey(h.companyId, 'live', 'deals')
    await h.store.dataTables.insert({ ...table!, id: '0123456789abcdef01234567', key: 'other_deals' })
    const deals = await postRecords('deals', [{ deal_id: 'D-3' }], '?debounce=60')
    expect(await postRecords('deals', [{ deal_id: 'D-4' }])).toBe(deals)
    expect(await postRecords('other_deals', [{ deal_id: 'O-1' }, { deal_id: 'O-2' }], '?debounce=60')).toBe(deals)
    expect(await putUsers([{ email: 'a@acme.example' }], '?debounce=60')).not.toBe(deals)
    const globex = await h.server.load(smallFixture('Globex'))
    const theirs = await h.server.call('/v1/tables/deals/records/bulk?debounce=60', {
      method: 'POST',
      key: globex.apiKey,
      body: [{ deal_id: 'G-1' }],
    })
    expect(theirs.body.import_id).not.toBe(deals)
    expect((await h.importOf(deals)).data_tables_details.map((detail: any) => [detail.data_table_key, detail.status])).toStrictEqual([
      ['deals', 'scheduled'],
      ['deals', 'scheduled'],
      ['other_deals', 'scheduled'],
    ])
  })

  it('applies each stacked call to its own table, with its own all and outcome', async () => {
    const table = await h.store.dataTables.getByKey(h.companyId, 'live', 'deals')
    const other = { ...table!, id: '0123456789abcdef01234567', key: 'other_deals' }
    await h.store.dataTables.insert(other)
    await h.store.records.upsert(h.companyId, [
      {
        id: '0123456789abcdef01234568',
        company_id: h.companyId,
        table_id: other.id,
        external_id: 'O-0',
        values: { deal_id: 'O-0' },
        overrides: {},
        created_at: '2026-01-01T00:00:00.000Z',
        modified_at: '2026-01-01T00:00:00.000Z',
      },
    ])
    const id = await postRecords('other_deals', [{ deal_id: 'O-1' }], '?all=true&debounce=30')
    await postRecords('deals', [{ deal_id: 'D-9', amount: 'lots' }, { deal_id: 'D-10' }], '?debounce=30')
    await postRecords('other_deals', [{ deal_id: 'O-2' }], '?debounce=30')
    h.server.clock.advance(30_000)
    expect(await h.drain()).toBe(1)
    const result = await h.importOf(id)
    expect(result.error).toBe(true)
    expect(result.data_tables_details.map((detail: any) => [detail.data_table_key, detail.error?.title ?? null])).toStrictEqual([
      ['other_deals', null],
      ['deals', 'PartialFailure'],
      ['other_deals', null],
    ])
    const keysOf = async (tableId: string) =>
      (await h.store.records.list(h.companyId, tableId, { offset: 0, limit: 100 })).map((record) => record.external_id)
    // all=true emptied other_deals only, once, before its first call; deals kept its records.
    expect(await keysOf(other.id)).toStrictEqual(['O-1', 'O-2'])
    expect(await keysOf(table!.id)).toStrictEqual(['D-1', 'D-2', 'D-10'])
  })

  it('with all=true empties the table once, before the merged payloads are applied', async () => {
    const id = await postRecords('deals', [{ deal_id: 'N-1' }, { deal_id: 'N-2' }], '?all=true&debounce=30')
    await postRecords('deals', [{ deal_id: 'N-3' }], '?all=true&debounce=30')
    await postRecords('deals', [{ deal_id: 'N-4' }, { deal_id: 'N-1', deleted: true }], '?debounce=30')
    h.server.clock.advance(30_000)
    expect(await h.drain()).toBe(1)
    expect((await h.importOf(id)).error).toBe(false)
    const table = await h.store.dataTables.getByKey(h.companyId, 'live', 'deals')
    const records = await h.store.records.list(h.companyId, table!.id, { offset: 0, limit: 100 })
    expect(records.map((record) => record.external_id).toSorted()).toStrictEqual(['N-2', 'N-3', 'N-4'])
  })

  it('with all=true empties the table for an empty call, even beside a call of its window whose every record was refused', async () => {
    const table = await h.store.dataTables.getByKey(h.companyId, 'live', 'deals')
    const records = () => h.store.records.list(h.companyId, table!.id, { offset: 0, limit: 100 })
    expect(await records()).not.toEqual([])
    const id = await postRecords('deals', [{ deal_id: 'N-1', amount: 'lots' }], '?all=true&debounce=30')
    await postRecords('deals', [], '?all=true&debounce=30')
    h.server.clock.advance(30_000)
    expect(await h.drain()).toBe(1)
    expect((await h.importOf(id)).data_tables_details.map((detail: { error: unknown }) => detail.error !== null)).toEqual([true, false])
    expect(await records()).toEqual([])
  })

  it('debounce=0 opens no window: each call is its own import', async () => {
    const first = await putUsers([{ email: 'a@acme.example' }], '?debounce=0')
    expect(await putUsers([{ email: 'b@acme.example' }], '?debounce=0')).not.toBe(first)
    expect(await h.drain()).toBe(2)
  })
})
