import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { newId } from '../src/ids.ts'
import { type ImportHarness, startImportHarness } from './imports-support.ts'
import { aUser } from './store/builders.ts'

let h: ImportHarness
beforeEach(async () => {
  h = await startImportHarness()
})
afterEach(async () => {
  await h.close()
})

const putUsers = (data: unknown, query = '') => h.call(`/v1/users/bulk${query}`, { method: 'PUT', body: { data } })

/** Sends users, runs the import, and returns the finished import. */
async function imported(data: unknown[]): Promise<any> {
  const reply = await putUsers(data)
  expect(reply.status).toBe(200)
  await h.drain()
  const result = await h.importOf(reply.body.import_id)
  expect(result.status).toBe('finished')
  return result
}

describe('PUT /v1/users/bulk: the call', () => {
  it('answers 200 {import_id, objects_imported} once the payload is stored, and applies it when the import runs', async () => {
    const reply = await putUsers([{ email: 'new@acme.example', name: 'Nina New', currency: 'USD' }])
    expect(reply.status).toBe(200)
    expect(reply.body).toStrictEqual({ import_id: expect.stringMatching(/^[0-9a-f]{24}$/), objects_imported: 1 })
    const stored = await h.store.imports.payloads(h.companyId, reply.body.import_id)
    expect(stored.map((payload) => payload.items)).toStrictEqual([[{ email: 'new@acme.example', name: 'Nina New', currency: 'USD' }]])
    expect(await h.importOf(reply.body.import_id)).toMatchObject({
      status: 'scheduled',
      progress: 0,
      error: false,
      launched_at: null,
      finished_at: null,
      // Nothing applied yet.
      data_tables_details: [{ status: 'scheduled', number_of_records: null, error: null }],
    })
    expect(await h.user('new@acme.example')).toBeUndefined()

    h.server.clock.advance(5000)
    expect(await h.drain()).toBe(1)
    expect(await h.importOf(reply.body.import_id)).toStrictEqual({
      id: reply.body.import_id,
      created_at: '2026-06-01T00:00:00.000Z',
      launched_at: '2026-06-01T00:00:05.000Z',
      finished_at: '2026-06-01T00:00:05.000Z',
      status: 'finished',
      progress: 100,
      error: false,
      data_tables_details: [
        { type: 'api', status: 'finished', data_table_key: 'users', progress: 100, number_of_records: 1, error: null, ignored_keys: [] },
      ],
    })
    expect(await h.user('NEW@acme.example')).toMatchObject({
      email: 'new@acme.example',
      name: 'Nina New',
      status: 'active',
      currency: 'USD',
      calculation_currency: 'USD',
      role: null,
      created_at: '2026-06-01T00:00:05.000Z',
    })
  })

  it('refuses more than 200 users with 400 on resource data, and creates no import', async () => {
    const users = Array.from({ length: 201 }, (_, index) => ({ email: `u${index}@acme.example` }))
    const reply = await putUsers(users)
    expect(reply.status).toBe(400)
    expect(reply.body).toStrictEqual({
      count: 1,
      errors: [{ error: 'ValidationError', resource: 'data', description: expect.any(String) }],
    })
    expect(await h.drain()).toBe(0)
    expect((await putUsers(users.slice(0, 200))).body.objects_imported).toBe(200)
  })

  it.each([
    ['no data', {}],
    ['data not a list', { data: { email: 'a@acme.example' } }],
    ['an item that is not an object', { data: [{ email: 'a@acme.example' }, ['b@acme.example']] }],
  ])('refuses a malformed body (%s) with 400 on resource data, and creates no import', async (_name, body) => {
    const reply = await h.call('/v1/users/bulk', { method: 'PUT', body })
    expect(reply.status).toBe(400)
    expect(reply.body.errors.map((error: any) => error.resource)).toContain('data')
    expect(reply.body.errors.every((error: any) => error.error === 'ValidationError')).toBe(true)
    expect(await h.drain()).toBe(0)
  })

  it('refuses a body that is not JSON with 400 on resource data too, and a bad debounce with 400 on resource debounce', async () => {
    const text = await h.call('/v1/users/bulk', { method: 'PUT', body: 'email=a@acme.example', headers: { 'content-type': 'text/plain' } })
    expect(text.status).toBe(400)
    // "400 for a malformed body ... error body with resource data", whatever is malformed about it.
    for (const body of ['{"data": [', '[]', '"users"', '']) {
      const broken = await h.call('/v1/users/bulk', { method: 'PUT', body, headers: { 'content-type': 'application/json' } })
      expect(broken.status, body).toBe(400)
      expect(broken.body, body).toStrictEqual({
        count: 1,
        errors: [{ error: 'ValidationError', resource: 'data', description: expect.any(String) }],
      })
    }
    expect(await h.drain()).toBe(0)
    for (const debounce of ['-1', '1.5', 'soon', '1e400', '-1e400', '0x10', ' ', '1e1']) {
      const reply = await putUsers([{ email: 'a@acme.example' }], `?debounce=${encodeURIComponent(debounce)}`)
      expect(reply.status).toBe(400)
      expect(reply.body.errors[0].resource).toBe('debounce')
    }
    expect(await h.drain()).toBe(0)
  })

  it('needs a key: 401 without one', async () => {
    const reply = await h.server.call('/v1/users/bulk', { method: 'PUT', body: { data: [] } })
    expect(reply.status).toBe(401)
  })
})

describe('PUT /v1/users/bulk: applying the users', () => {
  it('matches by email case-insensitively: the fields sent change, the others stay, null empties one', async () => {
    const before = await h.user('owner@acme.example')
    const result = await imported([{ email: 'OWNER@Acme.Example', name: 'Olive O.', role: null, region: null, junior: true }])
    expect(result.error).toBe(false)
    const after = await h.user('owner@acme.example')
    expect(after).toStrictEqual({
      ...before,
      name: 'Olive O.',
      role: null,
      junior: true,
      attributes: { region: null, base_salary: 50000, base_salary_currency: 'EUR' },
      modified_at: '2026-06-01T00:00:00.000Z',
    })
    expect(await h.store.users.count(h.companyId)).toBe(3)
  })

  it('writes every standard field and custom attribute in its format', async () => {
    const user = {
      email: 'full@acme.example',
      name: 'Full',
      role: 'sales',
      currency: 'GBP',
      calculation_currency: 'EUR',
      country: 'FR',
      code: 'E-7',
      arrival_date: '2026-02-28',
      junior: false,
      region: 'APAC',
      base_salary: 42000,
      base_salary_currency: 'GBP',
    }
    expect((await imported([user])).error).toBe(false)
    const stored = await h.user('full@acme.example')
    const { email, region, base_salary, base_salary_currency, ...standard } = user
    expect(stored).toMatchObject({ email, ...standard, status: 'active', attributes: { region, base_salary, base_salary_currency } })
  })

  it.each([
    [{ email: 'x@acme.example', currency: 'euro' }, 'currency: expected a currency code'],
    [{ email: 'x@acme.example', calculation_currency: 'usd' }, 'calculation_currency: expected a currency code'],
    [{ email: 'x@acme.example', arrival_date: '2026-02-30' }, 'arrival_date: expected a date YYYY-MM-DD'],
    [{ email: 'x@acme.example', junior: 'yes' }, 'junior: expected true or false'],
    [{ email: 'x@acme.example', name: 12 }, 'name: expected a string'],
    [{ email: 'x@acme.example', team: 'North' }, 'team: unknown field'],
    [{ email: 'x@acme.example', region: 3 }, 'region: expected a string'],
    [{ email: 'x@acme.example', base_salary: '1000', base_salary_currency: 'EUR' }, 'base_salary: expected a number'],
    [{ email: 'x@acme.example', base_salary: 1000 }, 'base_salary_currency: required'],
    [{ email: 'x@acme.example', base_salary_currency: 'eur' }, 'base_salary_currency: expected a currency code'],
    [{ name: 'No email' }, 'email: required'],
    [{ email: 'not an email' }, 'email: expected an email address'],
  ])('refuses the whole call when one user is invalid: %j', async (bad, details) => {
    const result = await imported([{ email: 'fine@acme.example', name: 'Fine' }, bad])
    expect(result.error).toBe(true)
    const [detail] = result.data_tables_details
    expect(detail.error).toStrictEqual({
      title: 'ValidationError',
      description: expect.stringContaining(`line 2: ${details}`),
      parsing_error_details: [{ line_number: 2, row: bad, details: expect.stringContaining(details) }],
    })
    expect(await h.user('fine@acme.example')).toBeUndefined()
    expect(await h.user('x@acme.example')).toBeUndefined()
  })

  it('lists every invalid user in the description of the refusal', async () => {
    const result = await imported([
      { email: 'a@acme.example', currency: 'x' },
      { email: 'b@acme.example' },
      { email: 'c@acme.example', junior: 1 },
    ])
    const error = result.data_tables_details[0].error
    expect(error.description).toMatch(/^2 invalid users.*line 1: currency.*line 3: junior/)
    expect(error.parsing_error_details.map((item: any) => item.line_number)).toStrictEqual([1, 3])
    expect(await h.user('b@acme.example')).toBeUndefined()
  })

  it('lists, beside an invalid item, the amounts without a currency it finds only against the stored users', async () => {
    const result = await imported([
      { email: 'new4@acme.example', base_salary: 5 },
      { email: 'new5@acme.example', junior: 1 },
      { email: 'new6@acme.example', base_salary: 6 },
    ])
    const error = result.data_tables_details[0].error
    expect(error.parsing_error_details.map((item: any) => [item.line_number, item.details])).toStrictEqual([
      [1, expect.stringMatching(/^base_salary_currency: required/)],
      [2, expect.stringMatching(/^junior: /)],
      [3, expect.stringMatching(/^base_salary_currency: required/)],
    ])
    expect(await h.user('new4@acme.example')).toBeUndefined()
  })

  it('reports, in a refused call, the repeated emails it would have skipped too, in line order', async () => {
    const result = await imported([{ email: 'new2@acme.example' }, { email: 'new3@acme.example', foo: 1 }, { email: 'NEW2@acme.example' }])
    const error = result.data_tables_details[0].error
    expect(error.title).toBe('ValidationError')
    expect(error.description).toMatch(
      /^1 invalid user, nothing of this call was imported: line 2: foo: unknown field.*; and 1 that would have been skipped: line 3: email: duplicated \(NEW2@acme.example\)$/,
    )
    expect(error.parsing_error_details.map((item: any) => [item.line_number, item.details])).toStrictEqual([
      [2, expect.stringMatching(/^foo: unknown field/)],
      [3, 'email: duplicated (NEW2@acme.example)'],
    ])
    expect(await h.user('new2@acme.example')).toBeUndefined()
  })

  it('names the repeat of a refused user too, which the fixed call would skip', async () => {
    const result = await imported([{ email: 'dd@acme.example', junior: 'x' }, { email: 'DD@acme.example' }])
    expect(result.data_tables_details[0].error.parsing_error_details.map((item: any) => [item.line_number, item.details])).toStrictEqual([
      [1, expect.stringMatching(/^junior: /)],
      [2, 'email: duplicated (DD@acme.example)'],
    ])
  })

  it('refuses a call whose every user is skipped as a ValidationError: nothing of it was imported', async () => {
    const result = await imported([{ email: 'gone@acme.example', name: 'Back' }])
    expect(result.data_tables_details[0].number_of_records).toBeNull()
    expect(result.data_tables_details[0].error).toStrictEqual({
      title: 'ValidationError',
      description: expect.stringMatching(
        /^every user of this call reported an issue and was skipped, nothing of it was imported: line 1: email: archived user/,
      ),
      parsing_error_details: [
        {
          line_number: 1,
          row: { email: 'gone@acme.example', name: 'Back' },
          details: 'email: archived user, cannot be changed (gone@acme.example)',
        },
      ],
    })
  })

  it('lists a new user after every user there is, though another process made one whose id sorts after its own', async () => {
    // An id that sorts after any this process makes in this second: as another process's may (their random part).
    const later = `${newId().slice(0, 8)}ffffffffffffff00`
    await h.store.users.save(h.companyId, [aUser(h.companyId, { id: later, email: 'other.process@acme.example' })])
    await imported([{ email: 'newest@acme.example' }])
    const { data } = (await h.call('/v1/users')).body
    expect(data.slice(-2).map((user: { email: string }) => user.email)).toStrictEqual(['other.process@acme.example', 'newest@acme.example'])
  })

  it('stores a PUT sent again with its X-Request-Id and body once, as nginx sends one whose instance died holding it', async () => {
    const put = (body: unknown, headers: Record<string, string>) => h.call('/v1/users/bulk', { method: 'PUT', body, headers })
    const body = { data: [{ email: 'resent@acme.example', name: 'Once' }] }
    const first = await put(body, { 'x-request-id': 'nginx-id-1' })
    const again = await put(body, { 'x-request-id': 'nginx-id-1' })
    expect(again.status).toBe(200)
    expect(again.body).toStrictEqual(first.body)
    // Another body under the same id, or the same body without an id the client gave: calls of their own.
    // Another client's call, then the first sent again: still the same call.
    const between = await put({ data: [{ email: 'other@acme.example' }] }, { 'x-request-id': 'nginx-id-2' })
    expect((await put(body, { 'x-request-id': 'nginx-id-1' })).body).toStrictEqual(first.body)
    const other = await put({ data: [{ email: 'resent@acme.example', name: 'Twice' }] }, { 'x-request-id': 'nginx-id-1' })
    const anonymous = [await put(body, {}), await put(body, {})]
    const ids = [first, between, other, ...anonymous].map((reply) => reply.body.import_id)
    expect(new Set(ids).size).toBe(5)
    await h.drain()
    const details = (await h.importOf(first.body.import_id)).data_tables_details
    expect(details).toHaveLength(1)
  })

  it('answers a PUT sent again with its first import though its own bytes fill the import queue, rather than a 429', async () => {
    const bounded = await startImportHarness('Bounded', { IMPORT_QUEUE_LIMIT_MB: '1' })
    try {
      // 600 KiB: the second would take the queue over its bound of 1 MiB, were it another call.
      const body = `{"data":[{"email":"big@bounded.example"}]}${' '.repeat(600 * 1024)}`
      const put = (id: string) =>
        bounded.call('/v1/users/bulk', { method: 'PUT', body, headers: { 'content-type': 'application/json', 'x-request-id': id } })
      const first = await put('nginx-0123')
      expect(first.status).toBe(200)
      const again = await put('nginx-0123')
      expect(again.status).toBe(200)
      expect(again.body).toStrictEqual(first.body)
      // Another call is still refused.
      expect((await put('nginx-0456')).status).toBe(429)
    } finally {
      await bounded.close()
    }
  })

  it('upserts the first of a repeated email and skips each later one as a PartialFailure', async () => {
    const result = await imported([
      { email: 'twin@acme.example', name: 'First' },
      { email: 'rep@acme.example', role: 'lead' },
      { email: 'Twin@Acme.example', name: 'Second' },
      { email: 'twin@acme.example', name: 'Third' },
    ])
    expect(result.error).toBe(true)
    expect(result.data_tables_details[0].error).toStrictEqual({
      title: 'PartialFailure',
      description: expect.stringMatching(/^2 of 4 users reported an issue/),
      parsing_error_details: [
        { line_number: 3, row: { email: 'Twin@Acme.example', name: 'Second' }, details: 'email: duplicated (Twin@Acme.example)' },
        { line_number: 4, row: { email: 'twin@acme.example', name: 'Third' }, details: 'email: duplicated (twin@acme.example)' },
      ],
    })
    expect((await h.user('twin@acme.example'))?.name).toBe('First')
    expect((await h.user('rep@acme.example'))?.role).toBe('lead')
  })

  it('skips an archived user (read-only through the interface) and applies the others', async () => {
    const before = await h.user('gone@acme.example')
    const result = await imported([
      { email: 'gone@acme.example', name: 'Back' },
      { email: 'rep@acme.example', name: 'Rita R.' },
    ])
    expect(result.data_tables_details[0].error).toMatchObject({
      title: 'PartialFailure',
      parsing_error_details: [{ line_number: 1, details: 'email: archived user, cannot be changed (gone@acme.example)' }],
    })
    expect(await h.user('gone@acme.example')).toStrictEqual(before)
    expect((await h.user('rep@acme.example'))?.name).toBe('Rita R.')
  })

  it('keeps the most recent 100 reported items', async () => {
    const data = [
      { email: 'dup@acme.example' },
      ...Array.from({ length: 150 }, (_, index) => ({ email: 'dup@acme.example', name: `n${index}` })),
    ]
    const error = (await imported(data)).data_tables_details[0].error
    expect(error.description).toMatch(/^150 of 151 users/)
    expect(error.parsing_error_details).toHaveLength(100)
    expect(error.parsing_error_details[0].line_number).toBe(52)
    expect(error.parsing_error_details[99].line_number).toBe(151)
  })
})

describe('GET /v1/imports/{import_id}', () => {
  it("answers 404 for an unknown id, a malformed id, and another company's import", async () => {
    const { import_id: id } = (await putUsers([{ email: 'a@acme.example' }])).body
    const other = await h.server.load((await import('./helpers/fixtures.ts')).smallFixture('Globex'))
    for (const [path, key] of [
      ['/v1/imports/0123456789abcdef01234567', h.key],
      ['/v1/imports/not-an-id', h.key],
      [`/v1/imports/${id}`, other.apiKey],
    ]) {
      const reply = await h.server.call(path, { key })
      expect(reply.status).toBe(404)
      expect(reply.body).toMatchObject({ resource: 'import', type: 'NotFoundError' })
    }
    expect((await h.server.call(`/v1/imports/${id}`, { key: h.key })).status).toBe(200)
  })
})
