import { Writable } from 'node:stream'
import { gzipSync } from 'node:zlib'
import { Type } from 'typebox'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../src/app.ts'
import { ManualClock } from '../src/clock.ts'
import { loadConfig } from '../src/config.ts'
import {
  ForbiddenError,
  NotFoundError,
  QueueFullError,
  TimedOutError,
  TooManyRequestsError,
  UnauthorizedError,
  ValidationError,
} from '../src/errors.ts'
import { schemaRefusal } from '../src/routes/errors.ts'
import { StoreBusyError, StoreUnconfirmedError } from '../src/store/port.ts'
import { openTestStore } from './helpers/test-store.ts'
import { call } from './helpers/server.ts'

const single = (resource: string) => ({ count: 1, errors: [{ error: 'ValidationError', resource, description: expect.any(String) }] })

/** The error handler, seen through a probe route with a schema for each part of a request. */
describe('error mapping', () => {
  let url: string
  let logs = ''
  let close: () => Promise<void>

  beforeAll(async () => {
    const { store, dispose } = await openTestStore()
    const logStream = new Writable({
      write(chunk, _encoding, done) {
        logs += chunk.toString()
        done()
      },
    })
    const app = await buildApp({ config: loadConfig({ DEMO: 'off' }), store, clock: new ManualClock(), logStream })
    app.post(
      '/probe/:id',
      {
        schema: {
          params: Type.Object({ id: Type.String({ pattern: '^[0-9a-f]{24}$' }) }),
          querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 2000 })) }, { additionalProperties: false }),
          body: Type.Object({ data: Type.Array(Type.Object({ email: Type.String() }), { maxItems: 2 }) }),
        },
      },
      async () => ({ ok: true }),
    )
    app.post('/echo', async (echoed) => ({ received: echoed.body }))
    app.post('/map', { schema: { body: Type.Record(Type.String(), Type.Number()) } }, async () => ({ ok: true }))
    app.get('/explode', async () => {
      throw new Error('database password is hunter2 at /srv/secret/path.ts:12')
    })
    app.post('/busy', async () => {
      throw new StoreBusyError('another writer held the store write lock for 10000 ms')
    })
    app.post('/unconfirmed', async () => {
      throw new StoreUnconfirmedError('connection 4 to db-1:27017 closed')
    })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const address = app.server.address()
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
    close = async () => {
      await app.close()
      await dispose()
    }
  })
  afterAll(() => close())

  const id = '0123456789abcdef01234567'
  const okBody = { data: [{ email: 'a@b.c' }] }

  it('accepts a valid request', async () => {
    const reply = await call(`${url}/probe/${id}?limit=5`, { method: 'POST', body: okBody })
    expect(reply.status).toBe(200)
  })

  it('a bad path parameter names it', async () => {
    const reply = await call(`${url}/probe/nope?limit=5`, { method: 'POST', body: okBody })
    expect(reply.status).toBe(400)
    expect(reply.body).toEqual(single('id'))
  })

  it.each([['limit=0'], ['limit=2001'], ['limit=ten'], ['limit=1.5']])('a bad query parameter (%s) names it', async (query) => {
    const reply = await call(`${url}/probe/${id}?${query}`, { method: 'POST', body: okBody })
    expect(reply.status).toBe(400)
    expect(reply.body).toEqual(single('limit'))
  })

  it('an unknown query parameter names it', async () => {
    const reply = await call(`${url}/probe/${id}?offset=3`, { method: 'POST', body: okBody })
    expect(reply.body).toEqual(single('offset'))
  })

  it('a bad body names its top-level field', async () => {
    const tooMany = await call(`${url}/probe/${id}`, { method: 'POST', body: { data: [{ email: 'a' }, { email: 'b' }, { email: 'c' }] } })
    expect(tooMany.status).toBe(400)
    expect(tooMany.body).toEqual(single('data'))
    const missing = await call(`${url}/probe/${id}`, { method: 'POST', body: {} })
    expect(missing.body).toEqual(single('data'))
  })

  it('a bad value under a key names the key as it was written, escapes and percent signs included', async () => {
    for (const key of ['100%', '%41', 'a/b~c']) {
      const res = await call(`${url}/map`, { method: 'POST', body: { [key]: 'not a number' } })
      expect(res.status).toBe(400)
      expect(res.body).toEqual(single(key))
    }
  })

  it('malformed JSON and an empty JSON body are 400s about the body', async () => {
    expect((await call(`${url}/probe/${id}`, { method: 'POST', body: '{"data": [' })).body).toEqual(single('body'))
    const empty = await call(`${url}/probe/${id}`, { method: 'POST', headers: { 'content-type': 'application/json' } })
    expect(empty.status).toBe(400)
    expect(empty.body.errors[0].error).toBe('ValidationError')
  })

  it('a wrong content type is a 400 naming Content-Type', async () => {
    const reply = await call(`${url}/probe/${id}`, { method: 'POST', headers: { 'content-type': 'application/xml' }, body: '<data/>' })
    expect(reply.status).toBe(400)
    expect(reply.body).toEqual(single('Content-Type'))
    // JSON labelled as text, as fetch labels a string body: told its label, not that it is no object.
    for (const label of ['text/plain;charset=UTF-8', 'text/plain']) {
      const text = await call(`${url}/probe/${id}`, { method: 'POST', headers: { 'content-type': label }, body: '{"data": []}' })
      expect(text, label).toMatchObject({ status: 400, body: single('Content-Type') })
      expect((await call(`${url}/echo`, { method: 'POST', headers: { 'content-type': label }, body: 'hello' })).status).toBe(400)
    }
  })

  it('an empty body is no body whatever its label, as Python\'s urllib labels data=b"" a form', async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded', 'content-length': '0' }
    // Refused by what the body must be, as an empty JSON body is, not for its label.
    const probe = await call(`${url}/probe/${id}`, { method: 'POST', headers: form })
    expect(probe.status).toBe(400)
    expect(probe.body.errors[0].resource).not.toBe('Content-Type')
    expect((await call(`${url}/echo`, { method: 'POST', headers: form })).body).toEqual({})
  })

  it('a body of another label sent where no route is, or with none, is a 404, not a 400 naming Content-Type', async () => {
    for (const [method, headers] of [
      ['POST', { 'content-type': 'application/xml' }],
      ['DELETE', { 'content-type': 'text/csv' }],
      ['POST', {}],
    ] as const) {
      const response = await request(`${url}/nowhere`, { method, headers, body: '<data/>' })
      expect(response.statusCode).toBe(404)
      expect(await response.body.json()).toMatchObject({ resource: 'route', type: 'NotFoundError' })
    }
    // Nor is a JSON body parsed there: one that is not JSON, or that JSON.parse would round, is the client's
    // mistake of route first.
    for (const body of ['nope', '{"n": 1e400}', '{"id": 9007199254740993}']) {
      const response = await request(`${url}/nowhere`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body })
      expect(response.statusCode, body).toBe(404)
      expect(await response.body.json()).toMatchObject({ resource: 'route', type: 'NotFoundError' })
    }
  })

  /** A POST of raw bytes to the echo route. */
  async function postBytes(bytes: Buffer, headers: Record<string, string>): Promise<{ status: number; body: any }> {
    const response = await request(`${url}/echo`, { method: 'POST', headers, body: bytes })
    return { status: response.statusCode, body: await response.body.json() }
  }

  it('reads a body as UTF-8, else in the charset its Content-Type names, and refuses bytes not valid in it rather than replacing them', async () => {
    const latin1 = Buffer.from('{"name":"caf\u00e9"}', 'latin1')
    expect(await postBytes(latin1, { 'content-type': 'application/json; charset=ISO-8859-1' })).toEqual({
      status: 200,
      body: { received: { name: 'café' } },
    })
    const utf8 = Buffer.from('{"name":"café"}', 'utf8')
    expect((await postBytes(utf8, { 'content-type': 'application/json; charset="utf-8"' })).body).toEqual({ received: { name: 'café' } })
    // Valid UTF-8 is read so whatever the label (RFC 8259): some clients label every body ISO-8859-1.
    for (const label of ['ISO-8859-1', 'us-ascii', 'klingon']) {
      expect((await postBytes(utf8, { 'content-type': `application/json; charset=${label}` })).body).toEqual({ received: { name: 'café' } })
    }
    // Latin-1 bytes sent as UTF-8 (no charset): refused, not stored as caf\ufffd.
    const mislabelled = await postBytes(latin1, { 'content-type': 'application/json' })
    expect(mislabelled).toEqual({ status: 400, body: single('body') })
    expect(mislabelled.body.errors[0].description).toContain('not valid UTF-8')
    // UTF-16 without a byte-order mark: ASCII text in it is valid UTF-8 too, but must be read as labelled.
    const utf16 = Buffer.from('{"name":"café"}', 'utf16le')
    expect((await postBytes(utf16, { 'content-type': 'application/json; charset=utf-16le' })).body).toEqual({ received: { name: 'café' } })
    const ascii16 = Buffer.from('{"name":"cafe"}', 'utf16le')
    for (const label of ['UTF-16LE', 'ucs-2', 'unicode', 'csunicode']) {
      expect((await postBytes(ascii16, { 'content-type': `application/json; charset=${label}` })).body).toEqual({
        received: { name: 'cafe' },
      })
    }
    const unknown = await postBytes(latin1, { 'content-type': 'application/json; charset=klingon' })
    expect(unknown).toEqual({ status: 400, body: single('Content-Type') })
  })

  it('refuses a compressed body by its Content-Encoding, which the service does not inflate', async () => {
    const body = Buffer.from('{"name":"x"}')
    for (const encoding of ['gzip', 'br']) {
      const refused = await postBytes(gzipSync(body), { 'content-type': 'application/json', 'content-encoding': encoding })
      expect(refused).toEqual({ status: 400, body: single('Content-Encoding') })
    }
    expect((await postBytes(body, { 'content-type': 'application/json', 'content-encoding': 'identity' })).status).toBe(200)
  })

  it('refuses a __proto__ key, or a constructor key holding prototype, saying so rather than that the body is not JSON', async () => {
    for (const text of [
      '{"data":[{"x":{"__proto__":{"polluted":1}}}]}',
      '{"constructor":{"prototype":{"polluted":1}}}',
      '{"__pr\\u006fto__":{"polluted":1}}',
    ]) {
      const refused = await postBytes(Buffer.from(text), { 'content-type': 'application/json' })
      expect(refused).toEqual({ status: 400, body: single('body') })
      expect(refused.body.errors[0].description).toContain('__proto__')
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('a store too busy to write is a 503 to come back after, not a failure', async () => {
    const reply = await call(`${url}/busy`, { method: 'POST' })
    expect(reply.status).toBe(503)
    expect(reply.headers['retry-after']).toBe('1')
    expect(reply.body).toEqual({ message: expect.stringContaining('try again'), type: 'ServiceUnavailableError' })
  })

  it('a write the store went out of reach before confirming is a 503 that does not say nothing was done, nor invites a retry', async () => {
    const reply = await call(`${url}/unconfirmed`, { method: 'POST' })
    expect(reply.status).toBe(503)
    expect(reply.headers['retry-after']).toBeUndefined()
    expect(reply.body).toEqual({ message: expect.stringContaining('may have been done'), type: 'ServiceUnavailableError' })
    expect(reply.body.message).not.toContain('nothing was done')
  })

  it('a 5xx carries no internal message or stack, and is logged with the request id', async () => {
    const reply = await call(`${url}/explode`, { headers: { 'x-request-id': 'boom-1' } })
    expect(reply.status).toBe(500)
    expect(reply.body).toEqual({ message: 'Internal server error', type: 'InternalServerError' })
    expect(reply.text).not.toContain('hunter2')
    expect(reply.text).not.toContain('.ts')
    const line = logs.split('\n').find((entry) => entry.includes('request failed'))
    expect(line).toBeDefined()
    expect(JSON.parse(line!)).toMatchObject({ request_id: 'boom-1', level: 50, err: { message: expect.stringContaining('hunter2') } })
  })
})

describe('refusals of a request', () => {
  const refusals = [
    new ValidationError({ resource: 'limit', description: 'must be >= 1' }),
    new NotFoundError('user'),
    new UnauthorizedError('Invalid API key'),
    new ForbiddenError('The public API is not enabled for this company'),
    new TooManyRequestsError('Too many requests', 1),
    new QueueFullError('The import queue is full', 5),
    new TimedOutError({ resource: 'imports', description: 'still running' }),
    schemaRefusal([{ keyword: 'minimum', instancePath: '/limit', schemaPath: '#', params: {}, message: 'must be >= 1' }], 'querystring'),
  ]

  it('are made without a stack trace (never logged, it cost a refused request a third of its time), their message kept', () => {
    for (const refusal of refusals) {
      expect(refusal).toBeInstanceOf(Error)
      expect(refusal.message).not.toBe('')
      expect(refusal.stack).not.toContain('\n    at ')
    }
    expect(refusals.at(-1)?.message).toBe('querystring/limit must be >= 1')
  })

  it('leave the stack trace of every other error as it was', () => {
    expect(new Error('a failure of ours').stack).toContain('\n    at ')
    expect(new StoreBusyError('busy').stack).toContain('\n    at ')
  })
})
