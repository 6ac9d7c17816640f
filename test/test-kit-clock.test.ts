import { afterEach, describe, expect, it } from 'vitest'
import { plannedFixture } from './helpers/fixtures.ts'
import { type KitServer, startKitServer, until } from './helpers/kit-server.ts'
import { exchange } from './helpers/raw-http.ts'

/**
 * The controlled clock over HTTP (`CLOCK=controlled`): read and moved through `/admin/clock`, and followed by
 * everything that depends on time: debounce windows, import leases, rate-limit windows, `created_at` and
 * `modified_at`, the current month of archives and of the calculation.
 */

const HOUR = 3_600_000
const DAY = 24 * HOUR

let server: KitServer
afterEach(() => server?.close())

const clockNow = async () => Date.parse((await server.admin('/admin/clock')).body.now)
const advance = (advance_ms: number) => server.admin('/admin/clock', { method: 'POST', body: { advance_ms } })
/** How far the `Date` of an answer's head is ahead of the system clock, in milliseconds. */
const dateAhead = (head: string) => Date.parse(/\r\ndate: ([^\r]*)\r\n/i.exec(head)?.[1] ?? '') - Date.now()
const importOf = async (importId: string) => (await server.api(`/v1/imports/${importId}`)).body.data_import
const finished = (importId: string) =>
  until(
    () => importOf(importId),
    (data) => data.status === 'finished',
  )

describe('the controlled clock', () => {
  it('starts at the real time, moves only ahead, and answers its mode and time', async () => {
    server = await startKitServer()
    const before = Date.now()
    const state = await server.admin('/admin/clock')
    expect(state.status).toBe(200)
    expect(state.body.mode).toBe('controlled')
    expect(Date.parse(state.body.now)).toBeGreaterThanOrEqual(before - 1000)
    expect(Date.parse(state.body.now)).toBeLessThanOrEqual(Date.now() + 1000)

    const moved = await advance(2 * HOUR)
    expect(moved.status).toBe(200)
    expect(moved.body.mode).toBe('controlled')
    expect(Date.parse(moved.body.now) - Date.now()).toBeGreaterThanOrEqual(2 * HOUR - 1000)
    // Every answer's Date header tells the service's time, so that a client reading the time from it agrees.
    const answer = await server.api('/v1/users?limit=0')
    expect(Date.parse(String(answer.headers.date)) - Date.now()).toBeGreaterThanOrEqual(2 * HOUR - 2000)

    const target = new Date(Date.parse(moved.body.now) + 3 * DAY).toISOString()
    const set = await server.admin('/admin/clock', { method: 'POST', body: { set: target } })
    expect(set.status).toBe(200)
    expect(Date.parse(set.body.now)).toBeGreaterThanOrEqual(Date.parse(target))
    expect(Date.parse(set.body.now)).toBeLessThan(Date.parse(target) + 1000)

    // Back by three days, or by a second only: never.
    const secondBack = new Date(Date.parse(set.body.now) - 1000).toISOString()
    for (const earlier of [moved.body.now, secondBack]) {
      const back = await server.admin('/admin/clock', { method: 'POST', body: { set: earlier } })
      expect(back.status, earlier).toBe(400)
      expect(back.body.errors).toEqual([
        expect.objectContaining({ error: 'ValidationError', resource: 'set', description: expect.stringContaining('never goes back') }),
      ])
    }
    // Each refusal names its one cause (a union of the two forms listed every branch's complaints: four or five).
    const refusals: [object, string, string?][] = [
      [{ advance_ms: -1 }, 'advance_ms'],
      [{ advance_ms: 1.5 }, 'advance_ms'],
      [{ set: 'tomorrow' }, 'set'],
      [{}, 'body', 'expected exactly one of advance_ms and set'],
      [{ advance_ms: 1, set: target }, 'body', 'expected exactly one of advance_ms and set'],
      [{ advance_ms: 0, colour: 'red' }, 'colour', 'unknown parameter colour'],
      [{ advance: 5 }, 'advance'],
    ]
    for (const [body, resource, description] of refusals) {
      const refused = await server.admin('/admin/clock', { method: 'POST', body })
      expect(refused.status, JSON.stringify(body)).toBe(400)
      expect(refused.body.errors, JSON.stringify(body)).toEqual([
        expect.objectContaining({ resource, ...(description === undefined ? {} : { description }) }),
      ])
    }
    expect(await clockNow()).toBeGreaterThanOrEqual(Date.parse(target))
    expect((await server.call('/admin/clock')).status).toBe(401)
  })

  it('tells its time in the Date header of the refusals answered outside the routes too', async () => {
    server = await startKitServer()
    await advance(2 * HOUR)
    // Fastify's own answers (a path that is not percent-encoding, an over-long path parameter), Node's (an unknown
    // Expect), and what the HTTP parser refused (malformed, headers too large) or no route takes (CONNECT).
    const requests = [
      `GET /v2/data-structures/%zz/fields HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`,
      `GET /v2/data-structures/${'a'.repeat(101)}/fields HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`,
      `GET /v1/users HTTP/1.1\r\nHost: localhost\r\nExpect: foo\r\nConnection: close\r\n\r\n`,
      'GET /v2/data-structures HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n',
      `GET /v2/data-structures HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      'CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n',
    ]
    for (const bytes of requests) {
      const head = (await exchange(server.url, bytes)).split('\r\n\r\n')[0]
      expect(head, bytes.slice(0, 40)).toMatch(/^HTTP\/1\.1 4\d\d /)
      expect(dateAhead(head), head).toBeGreaterThanOrEqual(2 * HOUR - 2000)
    }
  })

  it('tells a move answered by another process in the Date of those refusals, though no hook read the clock for them', async () => {
    server = await startKitServer()
    const requests = [
      `GET /v2/data-structures/%zz/fields HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`,
      `GET /v2/data-structures/${'a'.repeat(101)}/fields HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`,
      `GET /v1/users HTTP/1.1\r\nHost: localhost\r\nExpect: foo\r\nConnection: close\r\n\r\n`,
      'GET /v2/data-structures HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n',
      'CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n',
    ]
    for (const [index, bytes] of requests.entries()) {
      // Another process sharing the store moves the clock: its offset changes in the store alone.
      await server.running.store.clockOffset.advance(2 * HOUR)
      const head = (await exchange(server.url, bytes)).split('\r\n\r\n')[0]
      expect(dateAhead(head), head).toBeGreaterThanOrEqual(2 * HOUR * (index + 1) - 2000)
    }
  })

  it('refuses a move into the last three days of year 9999, so that the running clock stays short of them, and goes on serving', async () => {
    server = await startKitServer()
    const before = await clockNow()
    for (const body of [
      { advance_ms: 700_000_000_000_000 },
      { advance_ms: Number.MAX_SAFE_INTEGER },
      { set: '9999-12-29T00:00:00Z' },
      { set: '9999-12-31T23:00:00-14:00' },
    ]) {
      const refused = await server.admin('/admin/clock', { method: 'POST', body })
      expect(refused.status, JSON.stringify(body)).toBe(400)
      expect(refused.body.errors).toEqual([
        expect.objectContaining({ resource: Object.keys(body)[0], description: expect.stringContaining('9999-12-28T23:59:59.999Z') }),
      ])
    }
    expect(await clockNow()).toBeLessThan(before + 60_000)
    expect((await server.api('/v2/data-structures')).status).toBe(200)

    const toTheEnd = await server.admin('/admin/clock', { method: 'POST', body: { set: '9999-12-28T00:00:00Z' } })
    expect(toTheEnd.status).toBe(200)
    expect(toTheEnd.body.now).toMatch(/^9999-12-28T/)
    expect((await advance(DAY)).status).toBe(400)
  })

  it('with CLOCK=system, tells the system time and refuses to move', async () => {
    server = await startKitServer({ CLOCK: 'system' })
    const state = await server.admin('/admin/clock')
    expect(state.body.mode).toBe('system')
    expect(Math.abs(Date.parse(state.body.now) - Date.now())).toBeLessThan(2000)
    const refused = await advance(1000)
    expect(refused.status).toBe(400)
    expect(refused.body.errors).toEqual([expect.objectContaining({ error: 'ConflictError', resource: 'clock' })])
  })

  it('finishes a debounce of 300 seconds when the clock is moved 300 seconds ahead', async () => {
    server = await startKitServer()
    const calledAt = await clockNow()
    const first = await server.api('/v1/users/bulk?debounce=300', {
      method: 'PUT',
      body: { data: [{ email: 'first@demo.example', name: 'First' }] },
    })
    const second = await server.api('/v1/users/bulk', { method: 'PUT', body: { data: [{ email: 'second@demo.example', name: 'Second' }] } })
    expect(second.body.import_id).toBe(first.body.import_id)
    const scheduled = await importOf(first.body.import_id)
    expect(scheduled.status).toBe('scheduled')
    expect(Date.parse(scheduled.created_at) - calledAt).toBeLessThan(2000)

    // 299 s later the window is still open: a third call joins, and the worker (polling every 50 ms) leaves it.
    await advance(299_000)
    const third = await server.api('/v1/users/bulk', { method: 'PUT', body: { data: [{ email: 'third@demo.example' }] } })
    expect(third.body.import_id).toBe(first.body.import_id)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect((await importOf(first.body.import_id)).status).toBe('scheduled')

    await advance(1_000)
    const done = await finished(first.body.import_id)
    expect(done).toMatchObject({ status: 'finished', error: false })
    expect(done.data_tables_details.map((detail: { number_of_records: number }) => detail.number_of_records)).toEqual([1, 1, 1])
    expect(Date.parse(done.finished_at) - Date.parse(done.created_at)).toBeGreaterThanOrEqual(300_000)
    const users = (await server.api('/v1/users')).body.data.map((user: { email: string }) => user.email)
    expect(users).toEqual(expect.arrayContaining(['first@demo.example', 'second@demo.example', 'third@demo.example']))
  })

  it('stamps what it writes with its time: created_at of imports, modified_at of records and of the lines plans calculate', async () => {
    server = await startKitServer()
    await advance(10 * DAY)
    const now = await clockNow()
    // A deal of a seller of the demo, in a month whose statements are still pending, so that plans calculate it.
    const deals: { close_date: string }[] = (await server.api('/v1/tables/deals/records')).body.data
    const sold = deals.toSorted((a, b) => b.close_date.localeCompare(a.close_date))[0]
    const upsert = await server.api('/v1/tables/deals/records/bulk', {
      method: 'POST',
      body: [{ ...sold, id: 'D-CLOCK', name: 'Clock deal', amount: 10_000, amount_currency: 'EUR' }],
    })
    const done = await finished(upsert.body.import_id)
    expect(done.error).toBe(false)
    expect(Date.parse(done.created_at)).toBeGreaterThanOrEqual(now)
    expect(Date.parse(done.finished_at)).toBeGreaterThanOrEqual(now)

    // Only what was written at the service's time is modified after a real instant five days ahead.
    const after = new Date(Date.now() + 5 * DAY).toISOString()
    const structures = (await server.api('/v2/data-structures')).body.data
    const records = structures.find((structure: { type: string }) => structure.type === 'record_reporting')
    const changedLines = (await server.api(`/v2/reporting/${records.id}/records?limit=2000&last_modified_after=${after}`)).body.data
    expect(changedLines.length).toBeGreaterThan(0)
    expect(changedLines.map((line: Record<string, unknown>) => line['datatable.name'])).toContain('Clock deal')
    const statements = structures.find((structure: { type: string }) => structure.type === 'statement_reporting')
    expect(
      (await server.api(`/v2/reporting/${statements.id}/statements?limit=2000&last_modified_after=${after}`)).body.data.length,
    ).toBeGreaterThan(0)
  })

  it('closes rate-limit windows by its time', async () => {
    server = await startKitServer({ RATE_LIMIT_PER_SECOND: '2' })
    expect((await server.api('/v1/users?limit=0')).status).toBe(200)
    expect((await server.api('/v1/users?limit=0')).status).toBe(200)
    const refused = await server.api('/v1/users?limit=0')
    expect(refused.status).toBe(429)
    expect(refused.headers['retry-after']).toBe('1')
    // No real second goes by: the window ends because the service's time moved past it.
    await advance(1_000)
    expect((await server.api('/v1/users?limit=0')).status).toBe(200)
  })

  it('expires import leases by its time: an import whose worker died is taken over once the clock passes its lease', async () => {
    server = await startKitServer({ IMPORT_LEASE_MS: '60000' })
    const { store } = server.running
    const upsert = await server.api('/v1/users/bulk?debounce=100', { method: 'PUT', body: { data: [{ email: 'leased@demo.example' }] } })
    // A worker that claims the import at the end of its window and dies: its lease runs 60 s from then.
    const windowEnd = (await store.imports.get(server.demoId, upsert.body.import_id))!.window_ends_at
    const claimed = await store.imports.claimNext(
      'dead-worker',
      windowEnd,
      new Date(Date.parse(windowEnd) + 60_000).toISOString(),
      server.demoId,
    )
    expect(claimed?.id).toBe(upsert.body.import_id)

    await advance(100_000)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(await importOf(upsert.body.import_id)).toMatchObject({ status: 'started' })
    await advance(60_000)
    const done = await finished(upsert.body.import_id)
    expect(done.status).toBe('finished')
    expect((await store.imports.get(server.demoId, upsert.body.import_id))?.attempts).toBe(2)
  })

  it('gives archives and the calculation its current month', async () => {
    server = await startKitServer()
    const now = new Date(await clockNow())
    const month = (offset: number) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + offset, 15)).toISOString().slice(0, 10)
    const company = async (name: string) => {
      const created = await server.admin('/admin/companies', { method: 'POST', body: plannedFixture(name, [1, 2, 3].map(month)) })
      expect(created.status).toBe(201)
      return created.body as { company_id: string; api_key: string }
    }
    const statementDates = async (key: string) => {
      const structures = (await server.call('/v2/data-structures', { key })).body.data
      const statements = structures.find((structure: { type: string }) => structure.type === 'statement_reporting')
      const rows = (await server.call(`/v2/reporting/${statements.id}/statements?limit=2000`, { key })).body.data
      return rows
        .filter((row: { 'standard.user': { email: string } }) => row['standard.user'].email === 'seller@planned.example')
        .map((row: { 'standard.date': string }) => row['standard.date'].slice(0, 7))
        .toSorted()
    }
    const archive = (key: string) =>
      server.call('/v1/users/archive/bulk', { method: 'DELETE', key, body: { data: [{ user: 'seller@planned.example' }] } })
    const periods = [1, 2, 3].map((offset) => month(offset).slice(0, 7))

    // Archived now, without an end date: paid up to the month before the current one, so no later month is paid.
    const early = await company('Early')
    expect(await statementDates(early.api_key)).toEqual(periods)
    expect((await archive(early.api_key)).status).toBe(200)
    expect(await statementDates(early.api_key)).toEqual([])

    // Archived once the clock is two months further: the months before its current month stay paid.
    const late = await company('Late')
    await server.admin('/admin/clock', { method: 'POST', body: { set: `${month(2).slice(0, 8)}20T00:00:00Z` } })
    expect((await archive(late.api_key)).status).toBe(200)
    expect(await statementDates(late.api_key)).toEqual(periods.slice(0, 1))
  })
})
