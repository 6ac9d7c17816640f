import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { MAX_TEXT_CHARS, RECORD_TOO_LONG } from '../src/domain/record-values.ts'
import { ValidationError } from '../src/errors.ts'
import { newId } from '../src/ids.ts'
import type { DataTable, DataTableRecord } from '../src/store/model.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { startTestServer } from './helpers/server.ts'
import { type ImportHarness, startImportHarness } from './imports-support.ts'
import { aRecord } from './store/builders.ts'

let h: ImportHarness
let deals: DataTable
let activities: DataTable

const field = (api_key: string, type: DataTable['fields'][number]['type']) => ({
  api_key,
  name: api_key,
  type,
  created_at: '2026-01-01T00:00:00.000Z',
})

/** A live table with one field of every type, created the way the product would (here: straight in the store). */
function activitiesTable(companyId: string, environment: 'live' | 'sandbox' = 'live', key = 'activities'): DataTable {
  return {
    id: newId(),
    company_id: companyId,
    environment,
    key,
    name: 'Activities',
    id_field: 'activity_id',
    name_field: 'title',
    fields: [
      field('activity_id', 'string'),
      field('title', 'string'),
      field('calls', 'number'),
      field('amount', 'amount'),
      field('close_date', 'date'),
      field('done_at', 'datetime'),
      field('won', 'boolean'),
      field('tags', 'multi'),
    ],
    created_at: '2026-01-01T00:00:00.000Z',
  }
}

/** The live deals table of a fixture, to edit its records. */
const liveDealsOf = (fixture: any) =>
  fixture.data_tables.find((table: { key: string; environment?: string }) => table.key === 'deals' && !table.environment)

/** The line and the reason of each item the first call of an import skipped (its rows left out). */
const issuesOf = (result: any): Array<{ line_number: number; details: string }> =>
  result.data_tables_details[0].error.parsing_error_details.map(({ line_number, details }: { line_number: number; details: string }) => ({
    line_number,
    details,
  }))

/** Each of `keys` with the longest text a value holds. */
const full = (keys: string[]) => Object.fromEntries(keys.map((key) => [key, 'x'.repeat(MAX_TEXT_CHARS)]))

beforeEach(async () => {
  h = await startImportHarness()
  deals = (await h.store.dataTables.getByKey(h.companyId, 'live', 'deals'))!
  activities = activitiesTable(h.companyId)
  await h.store.dataTables.insert(activities)
})
afterEach(async () => {
  await h.close()
})

const post = (key: string, body: unknown, query = '') => h.call(`/v1/tables/${key}/records/bulk${query}`, { method: 'POST', body })

async function imported(key: string, records: unknown[], query = ''): Promise<any> {
  const reply = await post(key, records, query)
  expect(reply.status).toBe(200)
  expect(reply.body).toStrictEqual({ import_id: expect.any(String), objects_imported: records.length })
  await h.drain()
  const result = await h.importOf(reply.body.import_id)
  expect(result.status).toBe('finished')
  return result
}

async function recordsOf(table: DataTable): Promise<Map<string, DataTableRecord>> {
  const records = await h.store.records.list(h.companyId, table.id, { offset: 0, limit: 1000 })
  return new Map(records.map((record) => [record.external_id, record]))
}

describe('POST /v1/tables/{data_table_key}/records/bulk', () => {
  it("parses each record by the table's field types and upserts it by its id field", async () => {
    const result = await imported('activities', [
      {
        activity_id: 'A-1',
        title: 'Call',
        calls: '3',
        amount: 12.5,
        amount_currency: 'USD',
        close_date: '2026-05-31',
        done_at: '2026-05-31T10:00:00+02:00',
        won: 'true',
        tags: 'inbound; phone;;',
      },
      { activity_id: 7, title: 'Numeric id', won: false },
    ])
    expect(result).toMatchObject({
      error: false,
      data_tables_details: [{ type: 'api', data_table_key: 'activities', number_of_records: 2, error: null }],
    })
    const stored = await recordsOf(activities)
    expect(stored.get('A-1')?.values).toStrictEqual({
      activity_id: 'A-1',
      title: 'Call',
      calls: 3,
      amount: { value: 12.5, currency: 'USD' },
      close_date: '2026-05-31',
      done_at: '2026-05-31T08:00:00.000Z',
      won: true,
      tags: ['inbound', 'phone'],
    })
    expect(stored.get('7')?.values).toStrictEqual({ activity_id: '7', title: 'Numeric id', won: false })
  })

  it('lists a new record after every record of its table, though another process made one whose id sorts after its own', async () => {
    // An id that sorts after any this process makes in this second: as another process's may (their random part).
    const later = `${newId().slice(0, 8)}ffffffffffffff00`
    await h.store.records.saveMany(h.companyId, [
      { ...aRecord(h.companyId, activities.id, { id: later, external_id: 'OTHER' }), values: { activity_id: 'OTHER' } },
    ])
    await imported('activities', [{ activity_id: 'NEWEST' }])
    const { data } = (await h.call('/v1/tables/activities/records')).body
    expect(data.slice(-2).map((record: { activity_id: string }) => record.activity_id)).toStrictEqual(['OTHER', 'NEWEST'])
  })

  it('keeps the manual overrides a fixture gave only with keep_overrides=true, so that a connector can test the flag', async () => {
    const fixture = smallFixture('Overridden') as any
    const rows = liveDealsOf(fixture).records
    rows[0] = { ...rows[0], overrides: { deal_name: 'Named by hand', amount: 7, amount_currency: 'USD' } }
    rows[1] = { ...rows[1], overrides: { deal_name: 'Also by hand' } }
    const { apiKey } = await h.server.load(fixture)
    const call = (path: string, options = {}) => h.server.call(path, { key: apiKey, ...options })
    const [first, second] = [rows[0].deal_id, rows[1].deal_id]
    const shown = async () => (await call('/v1/tables/deals/records')).body.data.filter((row: any) => [first, second].includes(row.deal_id))
    expect(await shown()).toMatchObject([
      { deal_id: first, deal_name: 'Named by hand', amount: 7, amount_currency: 'USD' },
      { deal_id: second, deal_name: 'Also by hand' },
    ])

    const upsert = async (query: string) => {
      const reply = await call(`/v1/tables/deals/records/bulk${query}`, {
        method: 'POST',
        body: [
          { deal_id: first, deal_name: 'Imported' },
          { deal_id: second, deal_name: 'Imported too' },
        ],
      })
      expect(reply.status).toBe(200)
      await h.drain()
    }
    await upsert('?keep_overrides=true')
    expect(await shown()).toMatchObject([{ deal_name: 'Named by hand', amount: 7 }, { deal_name: 'Also by hand' }])
    // Without the flag, an imported value replaces the override of its field; the others stay.
    await upsert('')
    expect(await shown()).toMatchObject([{ deal_name: 'Imported', amount: 7, amount_currency: 'USD' }, { deal_name: 'Imported too' }])
  })

  it('refuses overrides a fixture gives that its table cannot hold, naming each', async () => {
    const fixture = smallFixture('BadOverrides') as any
    const rows = liveDealsOf(fixture).records
    rows[0] = { ...rows[0], overrides: { nope: 1, amount: 'lots', deal_id: 'X', deleted: true } }
    rows[1] = { ...rows[1], overrides: ['not', 'an', 'object'] }
    const refused = await h.server.load(fixture).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(ValidationError)
    const at = '/data_tables/0/records'
    expect((refused as ValidationError).issues.map(({ resource, description }) => `${resource}: ${description}`).toSorted()).toStrictEqual(
      [
        `${at}/0/overrides/amount: amount: expected a number, got "lots"`,
        `${at}/0/overrides/nope: nope: unknown field`,
        `${at}/0/overrides/deal_id: the id field cannot be overridden`,
        `${at}/0/overrides/deleted: not a field: an override does not delete a record`,
        `${at}/1/overrides: expected an object of field values`,
      ].toSorted(),
    )
  })

  it('reads numbers written in decimal only: 0x1F and 0b101 are refused, not read as 31 and 5', async () => {
    const records = [
      { activity_id: 'N-1', calls: '0x1F' },
      { activity_id: 'N-2', calls: '0b101' },
      { activity_id: 'N-3', calls: ' -1.5e2 ', amount: '.5', amount_currency: 'EUR' },
    ]
    const result = await imported('activities', records)
    expect(result.data_tables_details[0].error.parsing_error_details).toStrictEqual([
      { line_number: 1, row: records[0], details: 'calls: expected a number, got "0x1F"' },
      { line_number: 2, row: records[1], details: 'calls: expected a number, got "0b101"' },
    ])
    expect((await recordsOf(activities)).get('N-3')?.values).toMatchObject({ calls: -150, amount: { value: 0.5, currency: 'EUR' } })
  })

  it('takes a multi-valued field as a list too, but no value holding ;, which would read back as two', async () => {
    const records = [
      { activity_id: 'M-1', tags: ['inbound', ' phone '] },
      { activity_id: 'M-2', tags: ['x;y', 'z'] },
      // Empty values are dropped, as from the text form: read back as "a;b", it is sent back unchanged.
      { activity_id: 'M-3', tags: ['a', '', ' b', ' '] },
    ]
    const result = await imported('activities', records)
    expect(result.data_tables_details[0].error.parsing_error_details).toStrictEqual([
      { line_number: 2, row: records[1], details: 'tags: a value cannot hold ;, which separates them' },
    ])
    expect((await recordsOf(activities)).get('M-1')?.values).toMatchObject({ tags: ['inbound', 'phone'] })
    expect((await recordsOf(activities)).get('M-3')?.values).toMatchObject({ tags: ['a', 'b'] })
  })

  it('refuses a text value over 100,000 characters, a multi-valued field counting its values together', async () => {
    const longest = 'x'.repeat(MAX_TEXT_CHARS)
    const records = [
      { activity_id: 'L-1', title: longest, tags: `${'a;'.repeat(MAX_TEXT_CHARS / 2 - 1)}b` },
      { activity_id: 'L-2', title: `${longest}x` },
      // About 15 bytes of BSON a value: 100,000 values would take 1.5 MB, where the text takes 200 KB.
      { activity_id: 'L-3', tags: `${'a;'.repeat(MAX_TEXT_CHARS / 2)}a` },
      { activity_id: 'L-4', tags: Array.from({ length: MAX_TEXT_CHARS / 2 + 1 }, () => 'a') },
      { activity_id: 'L-5', tags: Array.from({ length: MAX_TEXT_CHARS / 2 }, () => 'a') },
    ]
    const result = await imported('activities', records)
    const tooLong = 'longer than 100,000 characters, the most a text value holds'
    expect(issuesOf(result)).toStrictEqual([
      { line_number: 2, details: `title: ${tooLong}` },
      { line_number: 3, details: `tags: ${tooLong}` },
      { line_number: 4, details: `tags: ${tooLong}` },
    ])
    const stored = await recordsOf(activities)
    expect(stored.get('L-1')?.values.title).toHaveLength(MAX_TEXT_CHARS)
    expect(stored.get('L-5')?.values).toMatchObject({ tags: expect.any(Array) })
    expect([...stored.keys()].filter((id) => id.startsWith('L-')).toSorted()).toEqual(['L-1', 'L-5'])
  })

  it('refuses an item that would make a record of the call hold more than 1,000,000 characters of text, before anything is applied', async () => {
    const notes = Array.from({ length: 12 }, (_, index) => `note_${index}`)
    const wide = {
      ...activitiesTable(h.companyId, 'live', 'wide'),
      fields: [field('activity_id', 'string'), ...notes.map((key) => field(key, 'string'))],
    }
    await h.store.dataTables.insert(wide)
    await imported('wide', [{ activity_id: 'KEEP-1', note_0: 'kept' }])
    // Alone over the bound, every record of an `all=true` call: the call is refused, and the table not emptied.
    const resync = await imported('wide', [{ activity_id: 'W-0', ...full(notes.slice(0, 10)) }], '?all=true')
    expect(resync.data_tables_details[0]).toMatchObject({ number_of_records: null, error: { title: 'ValidationError' } })
    expect([...(await recordsOf(wide)).keys()]).toEqual(['KEEP-1'])

    const first = await imported('wide', [
      // Ten notes and its id: 1,000,003 characters.
      { activity_id: 'W-1', ...full(notes.slice(0, 10)) },
      { activity_id: 'W-2', ...full(notes.slice(0, 9)) },
      { activity_id: 'W-3', ...full(notes.slice(0, 5)) },
      // The same record again in the call: with its first item, ten notes. The first item is applied.
      { activity_id: 'W-3', ...full(notes.slice(5, 10)) },
    ])
    expect(first.data_tables_details[0]).toMatchObject({ number_of_records: 2, error: { title: 'PartialFailure' } })
    expect(issuesOf(first)).toStrictEqual([
      { line_number: 1, details: RECORD_TOO_LONG },
      { line_number: 4, details: RECORD_TOO_LONG },
    ])
    const stored = await recordsOf(wide)
    expect([...stored.keys()].toSorted()).toEqual(['KEEP-1', 'W-2', 'W-3'])
    expect(Object.keys(stored.get('W-3')!.values).toSorted()).toEqual(['activity_id', ...notes.slice(0, 5)])
  })

  it('matches a record of a table whose id field is a number by its id as written, which a number could not keep', async () => {
    // Two ids past 2^53 are one number; and records stored as "07" must stay reachable by "07".
    const events: DataTable = { ...activitiesTable(h.companyId, 'live', 'events'), id_field: 'calls' }
    await h.store.dataTables.insert(events)
    await imported('events', [
      { calls: '9007199254740993', title: 'first' },
      { calls: '9007199254740992', title: 'second' },
      { calls: '07', title: 'seven' },
    ])
    await imported('events', [{ calls: '07', title: 'seven renamed' }])
    const stored = await recordsOf(events)
    expect([...stored.keys()].toSorted()).toStrictEqual(['07', '9007199254740992', '9007199254740993'])
    expect(stored.get('07')?.values).toMatchObject({ title: 'seven renamed' })
  })

  it('updates a record field by field, keeps its id, and deletes one sent with deleted: true', async () => {
    const before = await recordsOf(deals)
    h.server.clock.advance(60_000)
    const result = await imported('deals', [
      { deal_id: 'D-1', amount: 1500, amount_currency: 'EUR' },
      { deal_id: 'D-2', deleted: true },
      { deal_id: 'D-9', deleted: true },
    ])
    expect(result.error).toBe(false)
    const after = await recordsOf(deals)
    expect([...after.keys()]).toStrictEqual(['D-1'])
    expect(after.get('D-1')).toStrictEqual({
      ...before.get('D-1'),
      values: { ...before.get('D-1')!.values, amount: { value: 1500, currency: 'EUR' } },
      modified_at: '2026-06-01T00:01:00.000Z',
    })
  })

  it('checks the fields sent beside deleted: true: a bad one refuses the record, which is not deleted', async () => {
    const result = await imported('deals', [
      { deal_id: 'D-1', deleted: true, amount: 'lots' },
      { deal_id: 'D-9', deal_name: 'Kept apart' },
    ])
    expect(result.data_tables_details[0].error).toMatchObject({
      title: 'PartialFailure',
      parsing_error_details: [{ line_number: 1, details: expect.stringMatching(/^amount: /) }],
    })
    expect([...(await recordsOf(deals)).keys()]).toContain('D-1')
  })

  it('skips a bad record, reporting its line_number, row and details, and applies the others (PartialFailure)', async () => {
    const records = [
      { activity_id: 'A-1', calls: 'many' },
      { activity_id: 'A-2', title: 'Fine' },
      { title: 'No id' },
      'not a record',
      { activity_id: 'A-3', amount: 5 },
      { activity_id: 'A-4', close_date: '31/05/2026', color: 'red' },
      // Its offset takes it past the end of year 9999 in UTC, which no four-digit year writes.
      { activity_id: 'A-5', done_at: '9999-12-31T23:30:00-05:00' },
    ]
    const result = await imported('activities', records)
    expect(result.error).toBe(true)
    expect(result.data_tables_details[0].error).toStrictEqual({
      title: 'PartialFailure',
      description: expect.stringMatching(/^6 of 7 records reported an issue/),
      parsing_error_details: [
        { line_number: 1, row: records[0], details: 'calls: expected a number, got "many"' },
        { line_number: 3, row: records[2], details: 'activity_id: the id field is required' },
        { line_number: 4, row: 'not a record', details: 'expected a record object' },
        { line_number: 5, row: records[4], details: 'amount: expected amount_currency, a currency code such as EUR' },
        { line_number: 6, row: records[5], details: expect.stringMatching(/^close_date: expected a date YYYY-MM-DD[^;]*$/) },
        { line_number: 7, row: records[6], details: 'done_at: expected an ISO 8601 date-time, got "9999-12-31T23:30:00-05:00"' },
      ],
    })
    expect(result.data_tables_details[0].ignored_keys).toStrictEqual(['color'])
    // number_of_records counts the items applied, not the items sent.
    expect(result.data_tables_details[0].number_of_records).toBe(1)
    expect([...(await recordsOf(activities)).keys()]).toStrictEqual(['A-2'])
  })

  it('ignores keys the table does not know: the record is applied with its known fields, the detail names them once, error stays false', async () => {
    const records = [
      { activity_id: 'A-1', title: 'Call', crm_owner: 'x', Stage: 'won' },
      { activity_id: 'A-2', title: 'Demo', crm_owner: 'y', title_currency: 'EUR' },
      { activity_id: 'A-3', amount: 5, amount_currency: 'EUR' },
      // An amount's currency without its amount: read with the amount only, so ignored, and said so.
      { activity_id: 'A-3', amount_currency: 'USD' },
    ]
    const result = await imported('activities', records)
    expect(result.error).toBe(false)
    expect(result.data_tables_details).toMatchObject([
      { data_table_key: 'activities', error: null, ignored_keys: ['crm_owner', 'Stage', 'title_currency', 'amount_currency'] },
    ])
    const stored = await recordsOf(activities)
    expect(stored.get('A-1')?.values).toStrictEqual({ activity_id: 'A-1', title: 'Call' })
    expect(stored.get('A-2')?.values).toStrictEqual({ activity_id: 'A-2', title: 'Demo' })
    expect(stored.get('A-3')?.values).toStrictEqual({ activity_id: 'A-3', amount: { value: 5, currency: 'EUR' } })
    const fetched = await h.call('/v1/tables/activities/records')
    expect(fetched.body.data.flatMap(Object.keys)).not.toContain('crm_owner')
  })

  it('matches and stores a record by its id without surrounding spaces', async () => {
    await imported('activities', [{ activity_id: ' A-7 ', title: 'Spaced' }])
    expect((await recordsOf(activities)).get('A-7')?.values).toStrictEqual({ activity_id: 'A-7', title: 'Spaced' })
    await imported('activities', [{ activity_id: 'A-7', title: 'Trimmed' }])
    const stored = await recordsOf(activities)
    expect(stored.get('A-7')?.values).toStrictEqual({ activity_id: 'A-7', title: 'Trimmed' })
    expect(stored.size).toBe(1)
  })

  it('still skips and reports a record without its id field, among records with ignored keys', async () => {
    const records = [
      { title: 'No id', extra: 1 },
      { activity_id: 'A-1', extra: 2 },
    ]
    const result = await imported('activities', records)
    expect(result.error).toBe(true)
    expect(result.data_tables_details[0]).toMatchObject({
      ignored_keys: ['extra'],
      error: {
        title: 'PartialFailure',
        parsing_error_details: [{ line_number: 1, row: records[0], details: 'activity_id: the id field is required' }],
      },
    })
    expect([...(await recordsOf(activities)).keys()]).toStrictEqual(['A-1'])
  })

  it('empties the table before the import with all=true', async () => {
    await imported('deals', [{ deal_id: 'D-3', deal_name: 'Third' }], '?all=true')
    expect([...(await recordsOf(deals)).keys()]).toStrictEqual(['D-3'])
  })

  describe('all=true never empties a table by mistake', () => {
    it('refuses an all=true call whose every record is refused, and deletes nothing', async () => {
      const records = [{ deal_name: 'No id' }, { deal_id: 'D-9', amount: 'lots' }, 'not a record']
      const result = await imported('deals', records, '?all=true')
      expect(result.error).toBe(true)
      expect(result.data_tables_details[0]).toMatchObject({
        number_of_records: null,
        error: { title: 'ValidationError', description: expect.stringMatching(/^3 invalid records, nothing of this call was imported/) },
      })
      expect(result.data_tables_details[0].error.parsing_error_details.map((item: any) => item.line_number)).toStrictEqual([1, 2, 3])
      expect([...(await recordsOf(deals)).keys()]).toStrictEqual(['D-1', 'D-2'])
    })

    it('deletes nothing when every record of every call joined in the window is refused', async () => {
      const first = await post('deals', [{ deal_name: 'No id' }], '?all=true&debounce=30')
      await post('deals', [{ deal_id: 'D-9', amount: 'lots' }], '?debounce=30')
      h.server.clock.advance(30_000)
      await h.drain()
      const result = await h.importOf(first.body.import_id)
      expect(result.data_tables_details.map((detail: any) => [detail.error?.title, detail.number_of_records])).toStrictEqual([
        ['ValidationError', null],
        ['ValidationError', null],
      ])
      expect([...(await recordsOf(deals)).keys()]).toStrictEqual(['D-1', 'D-2'])
    })

    it('still empties the table for an explicit empty list with all=true', async () => {
      const result = await imported('deals', [], '?all=true')
      expect(result).toMatchObject({ error: false, data_tables_details: [{ number_of_records: 0, error: null }] })
      expect((await recordsOf(deals)).size).toBe(0)
    })

    it('empties the table when some record of the resync comes through, split over calls or not', async () => {
      const first = await post('deals', [{ deal_name: 'No id' }], '?all=true&debounce=30')
      await post('deals', [{ deal_id: 'N-1' }, { deal_id: 'N-2', amount: 'lots' }], '?debounce=30')
      h.server.clock.advance(30_000)
      await h.drain()
      const result = await h.importOf(first.body.import_id)
      expect(result.data_tables_details.map((detail: any) => [detail.error?.title, detail.number_of_records])).toStrictEqual([
        ['ValidationError', null],
        ['PartialFailure', 1],
      ])
      expect([...(await recordsOf(deals)).keys()]).toStrictEqual(['N-1'])
    })
  })

  it('reads the flags all and keep_overrides as true, false, 1 or 0 in any case; anything else is a 400 naming the flag', async () => {
    for (const query of ['?all=FALSE', '?all=0', '?all=False']) {
      await imported('deals', [{ deal_id: 'D-3', deal_name: 'Third' }], query)
      expect([...(await recordsOf(deals)).keys()]).toStrictEqual(['D-1', 'D-2', 'D-3'])
    }
    await imported('deals', [{ deal_id: 'D-4' }], '?all=True')
    expect([...(await recordsOf(deals)).keys()]).toStrictEqual(['D-4'])
    await imported('deals', [{ deal_id: 'D-5' }], '?all=1&keep_overrides=TRUE')
    expect([...(await recordsOf(deals)).keys()]).toStrictEqual(['D-5'])
    for (const [query, resource] of [
      ['?all=yes', 'all'],
      ['?all=', 'all'],
      ['?keep_overrides=2', 'keep_overrides'],
      ['?keep_overrides=truthy', 'keep_overrides'],
    ]) {
      const reply = await post('deals', [], query)
      expect(reply.status, query).toBe(400)
      expect(reply.body).toMatchObject({ count: 1, errors: [{ error: 'ValidationError', resource }] })
    }
    expect(await h.drain()).toBe(0)
  })

  describe('manual overrides', () => {
    beforeEach(async () => {
      const stored = (await recordsOf(deals)).get('D-1')!
      await h.store.records.upsert(h.companyId, [
        { ...stored, overrides: { deal_name: 'Renamed by hand', amount: { value: 1, currency: 'EUR' } } },
      ])
    })

    it('drops the override of a field the import sets, by default', async () => {
      await imported('deals', [{ deal_id: 'D-1', deal_name: 'From the CRM' }])
      expect((await recordsOf(deals)).get('D-1')?.overrides).toStrictEqual({ amount: { value: 1, currency: 'EUR' } })
    })

    it('keeps every override with keep_overrides=true', async () => {
      await imported('deals', [{ deal_id: 'D-1', deal_name: 'From the CRM' }], '?keep_overrides=true')
      const record = (await recordsOf(deals)).get('D-1')
      expect(record?.values.deal_name).toBe('From the CRM')
      expect(record?.overrides).toStrictEqual({ deal_name: 'Renamed by hand', amount: { value: 1, currency: 'EUR' } })
    })

    it('brings the overrides of a re-sent record back across all=true with keep_overrides=true, and not without', async () => {
      await imported('deals', [{ deal_id: 'D-1', deal_name: 'Again' }], '?all=true&keep_overrides=true')
      const kept = await recordsOf(deals)
      expect([...kept.keys()]).toStrictEqual(['D-1'])
      expect(kept.get('D-1')?.overrides).toStrictEqual({ deal_name: 'Renamed by hand', amount: { value: 1, currency: 'EUR' } })

      await imported('deals', [{ deal_id: 'D-1', deal_name: 'Again' }], '?all=true')
      expect((await recordsOf(deals)).get('D-1')?.overrides).toStrictEqual({})
    })
  })

  it('answers 404 for an unknown table and for a sandbox table, and creates no import', async () => {
    await h.store.dataTables.insert(activitiesTable(h.companyId, 'sandbox', 'sandbox_only'))
    for (const key of ['nope', 'sandbox_only']) {
      const reply = await post(key, [{ activity_id: 'A-1' }])
      expect(reply.status).toBe(404)
      expect(reply.body).toMatchObject({ type: 'NotFoundError', resource: 'data_table_key' })
    }
    expect(await h.drain()).toBe(0)
  })

  it('answers 400 for a body that is not an array of records, and for more than 10,000 records', async () => {
    for (const body of [{ deal_id: 'D-1' }, '"D-1"', '5']) {
      const reply = await h.call('/v1/tables/deals/records/bulk', { method: 'POST', body, headers: { 'content-type': 'application/json' } })
      expect(reply.status).toBe(400)
      expect(reply.body).toMatchObject({ count: 1, errors: [{ error: 'ValidationError', resource: 'body' }] })
    }
    const tooMany = await post(
      'deals',
      Array.from({ length: 10_001 }, (_, index) => ({ deal_id: `X-${index}` })),
    )
    expect(tooMany.status).toBe(400)
    expect(tooMany.body.errors[0].description).toMatch(/10000/)
    for (const query of ['?all=maybe', '?debounce=-5', '?keep_overrides=2']) expect((await post('deals', [], query)).status).toBe(400)
    expect(await h.drain()).toBe(0)
    expect(
      (
        await post(
          'deals',
          Array.from({ length: 10_000 }, (_, index) => ({ deal_id: `X-${index}` })),
        )
      ).status,
    ).toBe(200)
  })

  it('accepts 5,000 records of 4 KiB each (the top of the recommended batch) under the default body limit', async () => {
    // Each record is 4 KiB as JSON.
    const records = Array.from({ length: 5000 }, (_, index) => {
      const record = { deal_id: `B-${index}`, deal_name: '' }
      record.deal_name = 'x'.repeat(4096 - JSON.stringify(record).length)
      return record
    })
    expect(records.every((record) => JSON.stringify(record).length === 4096)).toBe(true)
    const result = await imported('deals', records)
    expect(result).toMatchObject({ error: false, data_tables_details: [{ error: null }] })
    expect(await h.store.records.count(h.companyId, deals.id)).toBe(5002)
  })

  it('answers 413 with the 400-shaped body for a body over the default 32 MiB, and creates no import', async () => {
    const big = [{ deal_id: 'D-1', deal_name: 'x'.repeat(32 * 1024 * 1024) }]
    const reply = await post('deals', big)
    expect(reply.status).toBe(413)
    expect(reply.body).toStrictEqual({
      count: 1,
      errors: [{ error: 'ValidationError', resource: 'body', description: expect.any(String) }],
    })
    expect(await h.drain()).toBe(0)
  })

  it('takes its body limit from BODY_LIMIT_MB, on every route', async () => {
    const server = await startTestServer({ BODY_LIMIT_MB: '1' })
    try {
      const { apiKey } = await server.load(smallFixture('Small'))
      const under = await server.call('/v1/tables/deals/records/bulk', {
        method: 'POST',
        key: apiKey,
        body: [{ deal_id: 'D-1', deal_name: 'x'.repeat(1000 * 1024) }],
      })
      expect(under.status).toBe(200)
      const over = await server.call('/v1/tables/deals/records/bulk', {
        method: 'POST',
        key: apiKey,
        body: [{ deal_id: 'D-1', deal_name: 'x'.repeat(1024 * 1024) }],
      })
      expect(over.status).toBe(413)
      expect(over.body).toStrictEqual({
        count: 1,
        errors: [{ error: 'ValidationError', resource: 'body', description: expect.any(String) }],
      })
      const users = await server.call('/v1/users/bulk', {
        method: 'PUT',
        key: apiKey,
        body: { data: [{ email: 'a@small.example', name: 'x'.repeat(1024 * 1024) }] },
      })
      expect(users.status).toBe(413)
    } finally {
      await server.close()
    }
  })

  it('bounds the bodies of the small calls (users, attributions, archives) at 2 MiB, before their items are read', async () => {
    const padding = 'x'.repeat(2 * 1024 * 1024)
    const refusals = [
      ['/v1/users/bulk', 'PUT', { data: [{ email: 'a@acme.example', name: padding }] }],
      ['/v1/users/managers/bulk', 'PUT', { data: [{ user: 'rep@acme.example', manager: padding }] }],
      ['/v1/users/groups/bulk', 'PUT', { data: [{ user: 'rep@acme.example', group: padding }] }],
      ['/v1/users/archive/bulk', 'DELETE', { data: [{ user: padding }] }],
    ] as const
    for (const [path, method, body] of refusals) {
      const reply = await h.call(path, { method, body })
      expect(reply.status, path).toBe(413)
      // These calls' body is {data}: as a whole, it is named data.
      expect(reply.body.errors, path).toEqual([expect.objectContaining({ resource: 'data' })])
    }
    // A records call of the same size is within the service-wide limit.
    expect((await post('deals', [{ deal_id: 'D-1', deal_name: padding }])).status).toBe(200)
    expect(
      (await h.call('/v1/users/bulk', { method: 'PUT', body: { data: [{ email: 'a@acme.example', name: 'x'.repeat(1024) }] } })).status,
    ).toBe(200)
  })
})
