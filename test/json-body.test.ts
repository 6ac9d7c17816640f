import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_JSON_DEPTH, unstorablePart } from '../src/routes/json-body.ts'
import { type ImportHarness, startImportHarness } from './imports-support.ts'

/** `levels` arrays nested in one another, as JSON text: `[[[]]]` is 3. */
const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels)

/** The path to the first value nested deeper than `limit`, as `unstorablePart` finds it. */
const tooDeepPath = (body: unknown, limit = MAX_JSON_DEPTH) => unstorablePart(body, limit)?.path ?? null

describe('unstorablePart', () => {
  it('measures the body itself as level 1 and names the path to the first value too deep', () => {
    expect(tooDeepPath([], 1)).toBeNull()
    expect(tooDeepPath([[]], 1)).toEqual([0])
    expect(tooDeepPath({ a: 1, b: [{ c: [[]] }] }, 5)).toBeNull()
    expect(tooDeepPath({ a: 1, b: [{ c: [[]] }] }, 4)).toEqual(['b', 0, 'c', 0])
    expect(tooDeepPath([{ ok: 1 }, { x: [[[]]] }, { y: [[[[]]]] }], 4)).toEqual([1, 'x', 0, 0])
  })

  it('measures a body far deeper than the stack allows', () => {
    const path = tooDeepPath(JSON.parse(nested(200_000)))
    expect(path).toHaveLength(MAX_JSON_DEPTH)
  })

  it('finds a number JSON.parse made infinite, and text that is not well-formed Unicode, in values and keys', () => {
    expect(unstorablePart(JSON.parse('[{"a":1},{"a":{"b":[1e400]}}]'))).toEqual({
      path: [1, 'a', 'b', 0],
      problem: expect.stringContaining('number'),
    })
    expect(unstorablePart(JSON.parse('{"data":[{"email":"a\\\\ud800@x.example"},{"email":"b\\ud800@x.example"}]}'))).toEqual({
      path: ['data', 1, 'email'],
      problem: expect.stringContaining('Unicode'),
    })
    expect(unstorablePart(JSON.parse('[{"id":"1","\udc00":"x"}]'))?.path).toEqual([0])
    expect(unstorablePart(JSON.parse('-1e999'))?.path).toEqual([])
    // The first in document order: what an earlier key holds, however deep, before a later key's value.
    expect(unstorablePart({ data: [{ a: { b: Infinity } }], z: '\ud800' })?.path).toEqual(['data', 0, 'a', 'b'])
    // Keys BSON cannot write, wherever they are.
    expect(unstorablePart(JSON.parse('[{"id":"1"},{"id":"2","row":{"_bsontype":"x"}}]'))).toEqual({
      path: [1, 'row'],
      problem: expect.stringContaining('_bsontype'),
    })
    expect(unstorablePart(JSON.parse('{"data":[{"email":"a@x.example","a\\u0000b":1}]}'))?.path).toEqual(['data', 0])
    expect(unstorablePart({ _bsontype: 1 })?.path).toEqual([])
    // What MongoDB stores as it is: keys with `$` or `.`, a zero character in a value, a key merely like `_bsontype`.
    expect(unstorablePart(JSON.parse('[{"$set":1,"a.b":2,"text":"a\\u0000b","_bsontype_x":3,"bsontype":4}]'))).toBeNull()
    // Well-formed text, surrogate pairs included, and large but finite numbers are stored as they came.
    expect(unstorablePart(JSON.parse('[{"id":"\ud83d\ude00","n":1.7976931348623157e308,"m":-0,"t":"\u2028"}]'))).toBeNull()
  })
})

describe('deeply nested JSON bodies', () => {
  let harness: ImportHarness
  beforeAll(async () => {
    harness = await startImportHarness()
  })
  afterAll(() => harness.close())

  const postRecords = (body: string) => harness.call('/v1/tables/deals/records/bulk', { method: 'POST', body })

  // Depths of the issue: 1,000 to 3,000 was accepted and failed the import; 5,000 was a 500.
  it.each([MAX_JSON_DEPTH, 1_000, 3_000, 5_000, 100_000])(
    'a record nesting %i levels in a value is a 400 naming the item',
    async (levels) => {
      const reply = await postRecords(`[{"deal_id":"X","deal_name":"ok"},{"deal_id":"Y","deal_name":${nested(levels)}}]`)
      expect(reply.status).toBe(400)
      expect(reply.body).toEqual({
        count: 1,
        errors: [{ error: 'ValidationError', resource: 'body', description: expect.stringContaining('at /1/deal_name') }],
      })
      expect(await harness.drain()).toBe(0)
    },
  )

  it('a user or an attribution nested too deeply is a 400 naming data and the item', async () => {
    const deep = nested(MAX_JSON_DEPTH)
    const users = await harness.call('/v1/users/bulk', { method: 'PUT', body: `{"data":[{"email":"a@acme.example","name":${deep}}]}` })
    expect(users.status).toBe(400)
    expect(users.body.errors[0]).toMatchObject({ resource: 'data', description: expect.stringContaining('at /data/0/name') })
    const managers = await harness.call('/v1/users/managers/bulk', { method: 'PUT', body: `{"data":[{"user":${deep}}]}` })
    expect(managers.status).toBe(400)
    expect(managers.body.errors[0]).toMatchObject({ resource: 'data', description: expect.stringContaining('at /data/0/user') })
  })

  it('a record or user with an infinite number, an unpaired surrogate or a key BSON cannot write is a 400 naming the item, and nothing is stored', async () => {
    // Stored, the number would have been null (the field emptied) and the surrogate U+FFFD (two ids made one).
    const records = await postRecords('[{"deal_id":"X","deal_name":"ok"},{"deal_id":"Y","amount":1e400,"amount_currency":"EUR"}]')
    expect(records.status).toBe(400)
    expect(records.body).toEqual({
      count: 1,
      errors: [{ error: 'ValidationError', resource: 'body', description: expect.stringContaining('at /1/amount') }],
    })
    const surrogate = await postRecords('[{"deal_id":"X\\\\ud800","deal_name":"a"},{"deal_id":"X\\ud800","deal_name":"b"}]')
    expect(surrogate.status).toBe(400)
    expect(surrogate.body.errors[0]).toMatchObject({ resource: 'body', description: expect.stringContaining('at /1/deal_id') })
    const bsonKey = await postRecords('[{"deal_id":"X","deal_name":"a"},{"deal_id":"Y","deal_name":"b","_bsontype":"Z"}]')
    expect(bsonKey.status).toBe(400)
    expect(bsonKey.body.errors[0]).toMatchObject({ resource: 'body', description: expect.stringContaining('at /1') })
    const users = await harness.call('/v1/users/bulk', { method: 'PUT', body: '{"data":[{"email":"a\\udc00@acme.example"}]}' })
    expect(users.status).toBe(400)
    expect(users.body.errors[0]).toMatchObject({ resource: 'data', description: expect.stringContaining('at /data/0/email') })
    expect(await harness.drain()).toBe(0)
  })

  it('an integer past 2^53 that a number holds only rounded is a 400 naming the item, and exact ones are stored', async () => {
    // As a Python client writes its ids: JSON.parse read both as 9007199254740992, and the second record replaced the first.
    const ids = await postRecords('[{"deal_id":9007199254740993,"deal_name":"a"},{"deal_id":9007199254740992,"deal_name":"b"}]')
    expect(ids.status).toBe(400)
    expect(ids.body.errors[0]).toMatchObject({
      resource: 'body',
      description: expect.stringContaining('only as 9007199254740992 (9007199254740993): send it as a string, at /0/deal_id'),
    })
    const users = await harness.call('/v1/users/bulk', {
      method: 'PUT',
      body: '{"data":[{"email":"a@acme.example","code":-12345678901234567}]}',
    })
    expect(users.status).toBe(400)
    expect(users.body.errors[0]).toMatchObject({ resource: 'data', description: expect.stringContaining('at /data/0/code') })
    // 2^60 exactly, as Python writes it, would be the id 1152921504606847000, which another Python id is.
    const twoTo60 = await postRecords('[{"deal_id":1152921504606846976},{"deal_id":1152921504606847000}]')
    expect(twoTo60.body.errors[0]).toMatchObject({ resource: 'body', description: expect.stringContaining('at /0/deal_id') })
    // One past what a number holds at all is refused as such.
    const huge = await postRecords(`[{"deal_id":"X","amount":${'9'.repeat(400)},"amount_currency":"EUR"}]`)
    expect(huge.body.errors[0]).toMatchObject({ resource: 'body', description: expect.stringContaining('too large') })
    expect(await harness.drain()).toBe(0)
    // Integers a number holds exactly, however long, such digits in a string, and a large number as JavaScript
    // writes it (2^60 as 1152921504606847000), are taken.
    expect((await postRecords(JSON.stringify([{ deal_id: 'L', amount: 2 ** 60, amount_currency: 'EUR' }]))).status).toBe(200)
    const exact = await postRecords(
      '[{"deal_id":"D-1, 12345678901234567","amount":100000000000000000000,"amount_currency":"EUR"},{"deal_id":9007199254740992}]',
    )
    expect(exact.status).toBe(200)
  })

  it('a run of ten million digits is looked through, not a 400 saying the body is not JSON', async () => {
    // The regular expression that looked for long integers overflowed the stack on it, which the parser took for
    // invalid JSON: text was refused, and an integer too large to be stored was refused for the wrong reason.
    const digits = '7'.repeat(10_000_000)
    const huge = await postRecords(`[{"deal_id":"X","amount":${digits},"amount_currency":"EUR"}]`)
    expect(huge.status).toBe(400)
    expect(huge.body.errors[0]).toMatchObject({
      resource: 'body',
      description: expect.stringContaining('too large to be stored, at /0/amount'),
    })
    expect((await postRecords(`[{"deal_id":"Y","deal_name":"serial numbers: ${digits}"}]`)).status).toBe(200)
  })

  it('a body at the limit is accepted, and its import reports the record without failing', async () => {
    // The body is level 1, the record level 2, so the value may nest MAX_JSON_DEPTH - 2 levels.
    const reply = await postRecords(`[{"deal_id":"Z","deal_name":${nested(MAX_JSON_DEPTH - 2)}}]`)
    expect(reply.status).toBe(200)
    await harness.drain()
    const done = await harness.importOf(reply.body.import_id)
    // Its only record is refused, so the call is (nothing of it applied): the import reports it, it does not fail.
    expect(done.data_tables_details[0].error).toMatchObject({
      title: 'ValidationError',
      parsing_error_details: [{ line_number: 1, details: 'deal_name: expected a string' }],
    })
  })

  it('an attribution whose text fields are objects without a usable toString is refused as data, not as an internal error', async () => {
    const reply = await harness.call('/v1/users/groups/bulk', {
      method: 'PUT',
      body: {
        data: [{ user: 'owner@acme.example', group_dimension: { toString: 1 }, group: { valueOf: 1, toString: 1 }, start_date: '2026-01' }],
      },
    })
    expect(reply.status).toBe(200)
    await harness.drain()
    const done = await harness.importOf(reply.body.import_id)
    expect(done.data_tables_details[0].error.title).toBe('ValidationError')
    expect(done.data_tables_details[0].error.description).toContain('group_dimension: expected a non-empty string')
    expect(done.data_tables_details[0].error.description).not.toContain('internal error')
  })
})
