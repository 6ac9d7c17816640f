import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { boundedDetails, DETAILS_BYTES, KEPT_ITEM_ISSUES } from '../src/imports/outcome.ts'
import type { ImportDetail, ImportItemIssue } from '../src/store/model.ts'
import { type ImportHarness, startImportHarness } from './imports-support.ts'
import { heavyItems, LARGEST_BODY_BYTES } from './store/builders.ts'

const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value))

describe('a call as large as the default body limit allows', () => {
  let h: ImportHarness
  beforeEach(async () => {
    h = await startImportHarness()
  })
  afterEach(async () => {
    await h.close()
  })

  it('is stored whole and applied, its refused records reported within the details an import keeps', async () => {
    // Records whose `deal_name` is a long array of numbers: refused (it must be text), and each reported with its
    // row, so the call's details alone would be as large as the body (and several times that in BSON).
    const records = heavyItems(LARGEST_BODY_BYTES - 512 * 1024)
    const body = JSON.stringify([...records, { deal_id: 'OK-1', deal_name: 'fine' }])
    expect(Buffer.byteLength(body)).toBeLessThan(LARGEST_BODY_BYTES)
    const reply = await h.call('/v1/tables/deals/records/bulk', { method: 'POST', body })
    expect(reply.status).toBe(200)
    expect(await h.drain()).toBe(1)
    const result = await h.importOf(reply.body.import_id)
    expect(result).toMatchObject({ status: 'finished', error: true })
    const [detail] = result.data_tables_details
    expect(detail.error.title).toBe('PartialFailure')
    expect(detail.error.description).toContain(`${records.length} of ${records.length + 1} records reported an issue`)
    expect(bytes(result.data_tables_details)).toBeLessThan(DETAILS_BYTES)
    // The most recent reported items are the ones kept.
    const kept: ImportItemIssue[] = detail.error.parsing_error_details
    expect(kept.length).toBeGreaterThan(0)
    expect(kept.at(-1)?.line_number).toBe(records.length)
    const table = (await h.store.dataTables.getByKey(h.companyId, 'live', 'deals'))!
    expect((await h.store.records.findByExternalIds(h.companyId, table.id, ['OK-1'])).size).toBe(1)
  })
})

const issue = (line: number, size: number): ImportItemIssue => ({ line_number: line, row: { text: 'x'.repeat(size) }, details: 'bad' })
const detail = (issues: ImportItemIssue[], description = 'some were skipped'): ImportDetail => ({
  payload_id: `p-${issues.length}`,
  number_of_records: issues.length,
  error: { title: 'PartialFailure', description, parsing_error_details: issues },
})

describe('boundedDetails', () => {
  it('keeps the details of an import of usual size as they are', () => {
    const details = [detail([issue(1, 100), issue(2, 100)]), { payload_id: 'p', number_of_records: 3, error: null }]
    expect(boundedDetails(details)).toStrictEqual(details)
  })

  it('drops the reported items of the earliest calls first, oldest first, saying how many', () => {
    const size = 64 * 1024
    const calls = Array.from({ length: 5 }, (_call, call) =>
      detail(Array.from({ length: KEPT_ITEM_ISSUES }, (_item, index) => issue(call * 1000 + index, size))),
    )
    expect(bytes(calls)).toBeGreaterThan(DETAILS_BYTES)
    const bounded = boundedDetails(calls)
    expect(bytes(bounded)).toBeLessThanOrEqual(DETAILS_BYTES)
    const kept = bounded.map((item) => item.error?.parsing_error_details.length ?? 0)
    expect(kept.slice(0, -1).every((count) => count === 0)).toBe(true)
    const last = bounded.at(-1)!.error!
    expect(last.parsing_error_details.at(-1)).toStrictEqual(calls.at(-1)!.error!.parsing_error_details.at(-1))
    expect(last.description).toContain(`${KEPT_ITEM_ISSUES - kept.at(-1)!} reported items are not listed`)
    expect(bounded[0].error!.description).toContain(`${KEPT_ITEM_ISSUES} reported items are not listed`)
    // The input is left as it was.
    expect(calls[0].error!.parsing_error_details).toHaveLength(KEPT_ITEM_ISSUES)
  })

  it('drops the ignored keys of the earliest calls when nothing else brings the details within bounds', () => {
    const calls = Array.from({ length: 3 }, (_call, call): ImportDetail => ({
      payload_id: `p-${call}`,
      number_of_records: 1,
      error: null,
      ignored_keys: Array.from({ length: 100 }, (_key, key) => `${call}-${key}-${'k'.repeat(10_000)}`),
    }))
    expect(bytes(calls)).toBeGreaterThan(DETAILS_BYTES)
    const bounded = boundedDetails(calls)
    expect(bytes(bounded)).toBeLessThanOrEqual(DETAILS_BYTES)
    expect(bounded[0].ignored_keys).toStrictEqual([])
    expect(bounded.at(-1)?.ignored_keys).toStrictEqual(calls.at(-1)?.ignored_keys)
  })

  it('shortens the earliest descriptions when the items alone do not bring the details within bounds', () => {
    const calls = Array.from({ length: 40 }, () => detail([], 'line 1: bad; '.repeat(10_000)))
    expect(bytes(calls)).toBeGreaterThan(DETAILS_BYTES)
    const bounded = boundedDetails(calls)
    expect(bytes(bounded)).toBeLessThanOrEqual(DETAILS_BYTES)
    expect(bounded[0].error!.description).toHaveLength(1001)
    expect(bounded.at(-1)!.error!.description).toBe(calls.at(-1)!.error!.description)
  })
})
