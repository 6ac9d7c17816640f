import { once } from 'node:events'
import { connect } from 'node:net'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { request } from 'undici'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createApiKey } from '../src/auth/api-keys.ts'
import { ManualClock } from '../src/clock.ts'
import { StoreBusyError } from '../src/store/port.ts'
import { type JournalEntry, MAX_RECORDED_CHARS, RequestJournal } from '../src/test-kit/journal.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { KIT_ADMIN_TOKEN, KIT_DEMO_KEY, type KitServer, startKitServer, until } from './helpers/kit-server.ts'

/** The request journal (`/admin/companies/{id}/requests`): what a test asserts its client sent, as WireMock's verify. */

let server: KitServer
afterEach(() => server?.close())

const journal = (query = '') => server.admin(`/admin/companies/${server.demoId}/requests${query}`)

/** A journal entry of `path`. */
const entryOf = (path: string): JournalEntry => ({
  method: 'GET',
  path,
  query: {},
  status: 200,
  duration_ms: 1,
  request_id: path,
  import_id: null,
  fault_id: null,
  at: '2026-11-27T00:00:00.000Z',
})

/** A text of 100,000 characters and more, distinct for each `index`. */
const long = (start: string, index: number) => `${start}${'x'.repeat(100_000)}${index}`

describe('the journal of a company (RequestJournal)', () => {
  it('keeps the last requests to arrive, whenever they ended: one held past its capacity is the one that goes', () => {
    const ring = new RequestJournal(3)
    // A arrives first and is held; B, C and D arrive and end; then A ends.
    for (const [path, arrival] of [
      ['/b', 1],
      ['/c', 2],
      ['/d', 3],
      ['/a', 0],
    ] as const)
      ring.record('company', entryOf(path), arrival)
    expect(ring.list('company').map((kept) => kept.path)).toEqual(['/d', '/c', '/b'])
    // One that arrived between two kept ones goes in its place, and the earliest arrival goes.
    ring.record('company', entryOf('/c2'), 2.5)
    expect(ring.list('company').map((kept) => kept.path)).toEqual(['/d', '/c2', '/c'])
  })

  it('holds no more than the characters it keeps of a long path, query name or value: a slice of a string holds the whole string', () => {
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as () => void
    // An object's property names are held by its shape until a later collection than the one that frees the object.
    const collect = () => [1, 2, 3].forEach(() => gc())
    const ring = new RequestJournal(100)
    collect()
    const before = process.memoryUsage().heapUsed
    // 100 entries cut from 40 MB of text.
    for (let index = 0; index < 100; index++) {
      const path = long('/v1/', index)
      const query = { [long('name', index)]: long('value', index), tag: [long('tag', index)] }
      ring.record('company', { ...entryOf(path), request_id: `request-${index}`, query }, index)
    }
    collect()
    // What is kept: 100 entries of three cuts of 2,048 characters, under 1 MB.
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(5_000_000)
    const [entry] = ring.list('company')
    expect(entry.path).toBe(long('/v1/', 99).slice(0, MAX_RECORDED_CHARS))
    // The name and the value cut spend the query's MAX_RECORDED_QUERY_CHARS: `tag` is left out.
    expect(entry.query).toEqual({ [long('name', 99).slice(0, MAX_RECORDED_CHARS)]: long('value', 99).slice(0, MAX_RECORDED_CHARS) })
  })
})

describe('the request journal', () => {
  it('keeps each request of the company, newest first: method, path, query, status, duration, request id, import, fault, time', async () => {
    server = await startKitServer()
    const clock = Date.parse((await server.admin('/admin/clock', { method: 'POST', body: { advance_ms: 86_400_000 } })).body.now)
    await server.api('/v1/users?limit=2&offset=1', { headers: { 'x-request-id': 'first-call' } })
    const upsert = await server.api('/v1/users/bulk?debounce=60', { method: 'PUT', body: { data: [{ email: 'journal@demo.example' }] } })
    const fault = await server.admin(`/admin/companies/${server.demoId}/faults`, {
      method: 'POST',
      body: { method: 'GET', path: '/v2/data-structures', status: 503, times: 1 },
    })
    await server.api('/v2/data-structures?tag=a&tag=b')
    await server.api('/v1/tables/unknown/records')
    // Not the company's: without a key, with another key, and the admin routes.
    await server.call('/v1/users')
    const other = await server.admin('/admin/companies', { method: 'POST', body: smallFixture('Other') })
    await server.call('/v1/users', { key: other.body.api_key })

    const listed = await journal()
    expect(listed.status).toBe(200)
    expect(listed.body.count).toBe(4)
    const [notFound, faulted, upserted, read] = listed.body.data
    expect(read).toEqual({
      method: 'GET',
      path: '/v1/users',
      query: { limit: '2', offset: '1' },
      status: 200,
      duration_ms: expect.any(Number),
      request_id: 'first-call',
      import_id: null,
      fault_id: null,
      at: expect.any(String),
    })
    expect(Date.parse(read.at)).toBeGreaterThanOrEqual(clock - 1000)
    expect(upserted).toMatchObject({
      method: 'PUT',
      path: '/v1/users/bulk',
      query: { debounce: '60' },
      status: 200,
      import_id: upsert.body.import_id,
      fault_id: null,
    })
    expect(faulted).toMatchObject({
      method: 'GET',
      path: '/v2/data-structures',
      query: { tag: ['a', 'b'] },
      status: 503,
      fault_id: fault.body.id,
    })
    expect(notFound).toMatchObject({ path: '/v1/tables/unknown/records', status: 404 })
    expect((await server.admin(`/admin/companies/${other.body.company_id}/requests`)).body.count).toBe(1)
    // A company deleted takes its journal with it.
    expect((await server.admin(`/admin/companies/${other.body.company_id}`, { method: 'DELETE' })).status).toBe(204)
    expect(server.running.app.testKit?.journal.list(other.body.company_id)).toEqual([])
  })

  it('keeps the path of a request sent in absolute form (GET http://host/v1/users), which its filters and faults then see', async () => {
    server = await startKitServer()
    await server.admin(`/admin/companies/${server.demoId}/faults`, {
      method: 'POST',
      body: { method: 'GET', path: '/v1/users', status: 503 },
    })
    const socket = connect(Number(new URL(server.url).port), '127.0.0.1')
    await once(socket, 'connect')
    let answer = ''
    socket.on('data', (chunk) => (answer += chunk))
    socket.write(
      `GET ${server.url}/v1/users?limit=2 HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${KIT_DEMO_KEY}\r\nConnection: close\r\n\r\n`,
    )
    await once(socket, 'close')
    expect(answer).toMatch(/^HTTP\/1\.1 503/)
    const entries = (await journal('?path_prefix=/v1/users')).body.data
    expect(entries).toEqual([expect.objectContaining({ path: '/v1/users', query: { limit: '2' }, status: 503 })])
  })

  it('keeps a query parameter whose name holds a line break, as sent', async () => {
    server = await startKitServer()
    await server.api('/v1/users?a%0Ab=1&plain=2')
    expect((await journal()).body.data[0].query).toEqual({ 'a\nb': '1', plain: '2' })
  })

  it('keeps an upsert whose client left before its answer, with no status and the import it made', async () => {
    server = await startKitServer()
    const body = JSON.stringify(Array.from({ length: 10_000 }, (_, index) => ({ deal_id: `LEFT-${index}`, deal_name: 'Left' })))
    const socket = connect(Number(new URL(server.url).port), '127.0.0.1')
    await once(socket, 'connect')
    socket.write(
      `POST /v1/tables/deals/records/bulk HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${KIT_DEMO_KEY}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    )
    // Gone once the whole request is sent, before its answer.
    await new Promise<void>((resolve) => socket.end(() => resolve()))
    socket.destroy()
    const entries = await until(
      async () => (await journal('?method=POST')).body.data,
      (data: unknown[]) => data.length > 0,
    )
    const imports = (await server.admin(`/admin/companies/${server.demoId}/imports`)).body.data
    expect(entries).toEqual([expect.objectContaining({ path: '/v1/tables/deals/records/bulk', status: null, import_id: imports[0]?.id })])
    expect(imports).toHaveLength(1)
  })

  it('filters by method, path prefix, status and time', async () => {
    server = await startKitServer()
    await server.api('/v1/users?limit=0')
    await server.api('/v1/users/bulk', { method: 'PUT', body: { data: [{ email: 'a@demo.example' }] } })
    const later = (await server.admin('/admin/clock', { method: 'POST', body: { advance_ms: 60_000 } })).body.now
    await server.api('/v2/data-structures')
    await server.api('/v1/tables/unknown/records')
    const paths = async (query: string) => (await journal(query)).body.data.map((entry: { path: string }) => entry.path)
    expect(await paths('?method=put')).toEqual(['/v1/users/bulk'])
    expect(await paths('?path_prefix=/v1/')).toEqual(['/v1/tables/unknown/records', '/v1/users/bulk', '/v1/users'])
    expect(await paths('?status=404')).toEqual(['/v1/tables/unknown/records'])
    expect(await paths(`?since=${encodeURIComponent(later)}`)).toEqual(['/v1/tables/unknown/records', '/v2/data-structures'])
    expect(await paths(`?since=${encodeURIComponent(later)}&method=GET&path_prefix=/v2`)).toEqual(['/v2/data-structures'])
    // Arrivals are kept to the millisecond: one at 10:00:00.123 is before 10:00:00.1231, as a v2 bound reads it.
    const last = (await journal()).body.data[0].at as string
    expect(await paths(`?since=${last.replace('Z', '0Z')}`)).toEqual(['/v1/tables/unknown/records'])
    expect(await paths(`?since=${last.replace('Z', '1Z')}`)).toEqual([])
    expect(await paths('?since=9999-12-31T23:59:59.9991Z')).toEqual([])
    const bad = await journal('?since=yesterday')
    expect(bad.status).toBe(400)
    expect(bad.body.errors[0].resource).toBe('since')
    const plus = await journal('?since=2026-11-27T12:00:00+02:00')
    expect(plus.status).toBe(400)
    expect(plus.body.errors).toEqual([expect.objectContaining({ resource: 'since', description: expect.stringContaining('%2B') })])
    const unrooted = await journal('?path_prefix=v1')
    expect(unrooted.status).toBe(400)
    expect(unrooted.body.errors).toEqual([
      expect.objectContaining({ resource: 'path_prefix', description: expect.stringContaining('/v1') }),
    ])
  })

  it('never keeps an API key, wherever the client put it', async () => {
    server = await startKitServer()
    await server.api(
      `/v1/users?api_key=${KIT_DEMO_KEY}&key=${encodeURIComponent(`x${KIT_DEMO_KEY}y`)}&other=cak_abcdefghijklmnopqrstuvwxyz&plain=kept`,
    )
    const text = (await journal()).text
    expect(text).not.toContain(KIT_DEMO_KEY)
    expect(text).not.toContain('cak_abcdefghijklmnop')
    expect((await journal()).body.data[0].query).toEqual({ api_key: '[Redacted]', key: '[Redacted]', other: '[Redacted]', plain: 'kept' })

    // As a parameter's name, plain or percent-encoded: the name is not kept, nor its value.
    await server.api(`/v1/users?${KIT_DEMO_KEY}=1&cak%5Fabcdefghijklmnopqrstuvwxyz=x&plain=kept`)
    const named = await journal()
    expect(named.text).not.toContain(KIT_DEMO_KEY)
    expect(named.text).not.toContain('cak_abcdefghijklmnop')
    expect(named.body.data[0].query).toEqual({ '[Redacted]': ['[Redacted]', '[Redacted]'], plain: 'kept' })

    // Nor the admin token, sent where a key goes (in the query, or in the path percent-encoded).
    await server.api(`/v1/users?access_token=${KIT_ADMIN_TOKEN}&plain=kept`)
    await server.api(`/v1/imports/${KIT_ADMIN_TOKEN.replace('k', '%6B')}`)
    const admin = await journal()
    expect(admin.text).not.toContain(KIT_ADMIN_TOKEN)
    expect(admin.body.data[0].path).toBe('/v1/imports/[Redacted]')
    expect(admin.body.data[1].query).toEqual({ access_token: '[Redacted]', plain: 'kept' })
  })

  it("never keeps another key's secret of any form, nor a key in the path", async () => {
    server = await startKitServer()
    // A fixture of an older version could give its keys any secret of 16 characters or more: this one has not the
    // service's form, which the logs know, and the store may still hold such a key.
    const secret = 'gamma-integration-secret-0002'
    const created = await server.admin('/admin/companies', { method: 'POST', body: smallFixture('Gamma') })
    expect(created.status).toBe(201)
    const store = server.running.store
    const owner = (await store.users.findByEmails(created.body.company_id, ['owner@gamma.example'])).get('owner@gamma.example')!
    await createApiKey(store, new ManualClock(), created.body.company_id, owner.id, secret)
    await server.api(`/v1/users?limit=1&start=${secret}&plain=not-a-key-but-long-enough`)
    await server.api(`/v1/tables/${KIT_DEMO_KEY}/records`)
    await server.api(`/v1/imports/${secret}`)
    await server.api(`/v1/imports/${secret.replace('a', '%61')}`)
    const [encodedInPath, otherInPath, inPath, inQuery] = (await journal()).body.data
    expect(encodedInPath.path).toBe('/v1/imports/[Redacted]')
    expect(inQuery.query).toEqual({ limit: '1', start: '[Redacted]', plain: 'not-a-key-but-long-enough' })
    expect(inPath.path).toBe('/v1/tables/[Redacted]/records')
    expect(otherInPath.path).toBe('/v1/imports/[Redacted]')
    expect((await journal()).text).not.toContain(secret)
    expect((await journal()).text).not.toContain('integration-secret')
  })

  it('keeps a v1 or v2 request to a path that names no route, which a client calling a wrong URL sends', async () => {
    server = await startKitServer()
    expect((await server.api('/v1/nothing?limit=1')).status).toBe(404)
    expect((await server.api('/v2/reporting')).status).toBe(404)
    // Outside v1 and v2, and without a valid key: not the company's.
    await server.api('/elsewhere')
    await server.call('/v1/nothing')
    const entries = (await journal()).body.data
    expect(entries.map((entry: any) => [entry.method, entry.path, entry.query, entry.status])).toEqual([
      ['GET', '/v2/reporting', {}, 404],
      ['GET', '/v1/nothing', { limit: '1' }, 404],
    ])
  })

  it('keeps the first 4,096 characters of the names and values of a query, each cut at 2,048', async () => {
    server = await startKitServer()
    const names = Array.from({ length: 30 }, (_, index) => `name${String(index).padStart(2, '0')}${'n'.repeat(94)}=${'v'.repeat(100)}`)
    await server.api(`/v2/data-structures?long=${'l'.repeat(3000)}&${names.join('&')}`)
    const [entry] = (await journal()).body.data
    // 4 + 2,048 characters, then ten names and values of 100 each, and no more: an eleventh would pass 4,096.
    expect(entry.query).toEqual({
      long: 'l'.repeat(2048),
      ...Object.fromEntries(names.slice(0, 10).map((parameter) => parameter.split('='))),
    })
  })

  it('keeps the first 100 query values of a request, however many times a URL repeats a parameter', async () => {
    server = await startKitServer()
    const repeated = Array.from({ length: 500 }, (_, index) => `tag=${index}`).join('&')
    await server.api(`/v2/data-structures?${repeated}&last=1`)
    const [entry] = (await journal()).body.data
    expect(entry.query.tag).toEqual(Array.from({ length: 100 }, (_, index) => String(index)))
    expect(entry.query.last).toBeUndefined()
  })

  it('keeps the last REQUEST_JOURNAL_SIZE requests of each company, and is cleared on demand', async () => {
    server = await startKitServer({ REQUEST_JOURNAL_SIZE: '3' })
    for (let offset = 0; offset < 5; offset++) await server.api(`/v1/users?limit=1&offset=${offset}`)
    expect((await journal()).body.data.map((entry: { query: { offset: string } }) => entry.query.offset)).toEqual(['4', '3', '2'])
    expect((await server.admin(`/admin/companies/${server.demoId}/requests`, { method: 'DELETE' })).status).toBe(204)
    expect((await journal()).body).toEqual({ count: 0, data: [] })
    await server.api('/v1/users?limit=0')
    expect((await journal()).body.count).toBe(1)
    expect((await server.admin('/admin/companies/0123456789abcdef01234567/requests')).status).toBe(404)
  })

  it('drops the journal and faults of a company whose deletion failed midway once the deletion is sent again (503, then 404)', async () => {
    server = await startKitServer()
    const kit = server.running.app.testKit!
    await server.admin(`/admin/companies/${server.demoId}/faults`, { method: 'POST', body: { method: 'GET', path: '/v2/*', status: 503 } })
    await server.api('/v1/users?limit=0')
    expect(kit.journal.list(server.demoId)).toHaveLength(1)
    // The company and its keys gone, then a write of its rows' sweep refused: the 503 a retry answers.
    const companies = server.running.store.companies
    const deleteAll = companies.delete.bind(companies)
    vi.spyOn(companies, 'delete').mockImplementationOnce(async (id) => {
      await deleteAll(id)
      throw new StoreBusyError('another writer held the write lock')
    })
    expect((await server.admin(`/admin/companies/${server.demoId}`, { method: 'DELETE' })).status).toBe(503)
    expect((await server.admin(`/admin/companies/${server.demoId}`, { method: 'DELETE' })).status).toBe(404)
    expect(kit.journal.list(server.demoId)).toEqual([])
    expect(kit.faults.list(server.demoId)).toEqual([])
  })

  it('keeps nothing of a deleted company, not even a request that arrived before its deletion and ended after it', async () => {
    server = await startKitServer()
    const kit = server.running.app.testKit!
    const key = server.running.app.config.demoApiKey!
    await server.admin(`/admin/companies/${server.demoId}/faults`, {
      method: 'POST',
      body: { method: 'GET', path: '/v1/users', delay_ms: 600 },
    })
    // Authenticated, then held by the fault while the company is deleted.
    const held = request(`${server.url}/v1/users`, { headers: { 'x-api-key': key } })
    await until(
      async () => kit.faults.list(server.demoId)[0]?.fired,
      (fired) => fired === 1,
    )
    expect((await server.admin(`/admin/companies/${server.demoId}`, { method: 'DELETE' })).status).toBe(204)
    await (await held).body.dump()
    // The journal takes a request once its answer is sent.
    await new Promise((resolve) => setTimeout(resolve, 200))

    expect(kit.journal.list(server.demoId)).toEqual([])
  })

  it('keeps nothing, once cleared, of a request that arrived before: one a delay held past the clear of the test before', async () => {
    server = await startKitServer()
    const key = server.running.app.config.demoApiKey!
    await server.admin(`/admin/companies/${server.demoId}/faults`, {
      method: 'POST',
      body: { method: 'GET', path: '/v1/users', delay_ms: 600 },
    })
    // One test's client gives up on a read the fault holds; the next test's hooks clear the journal (one company's,
    // then every company's) before the delay ends.
    const heldRead = () => request(`${server.url}/v1/users`, { headers: { 'x-api-key': key }, signal: AbortSignal.timeout(100) })
    await expect(heldRead()).rejects.toThrow(/abort|timeout/i)
    expect((await server.admin(`/admin/companies/${server.demoId}/requests`, { method: 'DELETE' })).status).toBe(204)
    await expect(heldRead()).rejects.toThrow(/abort|timeout/i)
    expect((await server.admin('/admin/reset', { method: 'POST' })).status).toBe(200)
    await server.api('/v2/data-structures')
    await new Promise((resolve) => setTimeout(resolve, 900))

    expect((await journal()).body.data.map((entry: JournalEntry) => entry.path)).toEqual(['/v2/data-structures'])
  })

  it('keeps nothing with REQUEST_JOURNAL_SIZE=0', async () => {
    server = await startKitServer({ REQUEST_JOURNAL_SIZE: '0' })
    await server.api('/v1/users?limit=0')
    expect((await journal()).body).toEqual({ count: 0, data: [] })
  })
})
