import { once } from 'node:events'
import { connect } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { smallFixture } from './helpers/fixtures.ts'
import { tempDataDir, startServerProcess } from './helpers/process.ts'
import { call, startTestServer, type TestServer } from './helpers/server.ts'

/** Sends a whole request on a raw connection, as a proxy does, and reads until the server closes it. */
async function sendWhole(url: string, head: string, body: Buffer): Promise<{ response: string; error: NodeJS.ErrnoException | null }> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1')
  await once(socket, 'connect')
  let response = ''
  let error: NodeJS.ErrnoException | null = null
  socket.on('data', (chunk) => (response += chunk.toString()))
  socket.on('error', (failure) => (error = failure))
  socket.write(head)
  socket.write(body)
  await once(socket, 'close')
  return { response, error }
}

/** Sends the same whole request three times, each on its own connection: the answers, none of them a reset. */
async function answersSentWhole(url: string, head: string, body: Buffer): Promise<string[]> {
  const answers: string[] = []
  for (let attempt = 0; attempt < 3; attempt++) {
    const { response, error } = await sendWhole(url, head, body)
    expect(error).toBeNull()
    answers.push(response)
  }
  return answers
}

/** The head of a record upsert with `key` and a body of `length` bytes, sent whole as a proxy sends it. */
const wholeUpsert = (key: string, length: number, contentType = 'application/json') =>
  `POST /v1/tables/deals/records/bulk HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${contentType}\r\n` +
  `X-API-Key: ${key}\r\nContent-Length: ${length}\r\n\r\n`

describe('a body over the limit', () => {
  let server: TestServer

  afterEach(() => server.close())

  it('is read to its end before the 413, so that a client (or a proxy) still sending it gets the answer, not a reset', async () => {
    server = await startTestServer()
    const { apiKey } = await server.load(smallFixture())
    // Over the service's limit (BODY_LIMIT_MB, 32 MiB by default).
    const body = Buffer.alloc(34 * 1024 * 1024, 'x')
    for (const response of await answersSentWhole(server.url, wholeUpsert(apiKey, body.length), body)) {
      expect(response).toMatch(/^HTTP\/1\.1 413 /)
      expect(JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4))).toEqual({
        count: 1,
        errors: [{ error: 'ValidationError', resource: 'body', description: expect.any(String) }],
      })
    }
  })
})

describe('an upsert refused because its import queue is full', () => {
  let server: TestServer

  afterEach(() => server.close())

  it('is read to its end before the 429, so that a client that sends it whole before reading (Python) gets the answer', async () => {
    server = await startTestServer({ IMPORT_QUEUE_LIMIT_MB: '1' })
    const { apiKey } = await server.load(smallFixture())
    // A window held open keeps the queue full.
    const records = Array.from({ length: 9000 }, (_, index) => ({ deal_id: `Q-${index}`, deal_name: 'x'.repeat(100) }))
    const queued = await server.call('/v1/tables/deals/records/bulk?debounce=600', { method: 'POST', key: apiKey, body: records })
    expect(queued.status).toBe(200)
    const body = Buffer.alloc(8 * 1024 * 1024, 'x')
    for (const response of await answersSentWhole(server.url, wholeUpsert(apiKey, body.length), body)) {
      expect(response).toMatch(/^HTTP\/1\.1 429 /)
      expect(response).toMatch(/\r\nconnection: close\r\n/i)
    }
  })
})

describe('a body under another label than JSON', () => {
  let server: TestServer

  afterEach(() => server.close())

  it('is read to its end before the 400 naming Content-Type, so that a client that sends it whole gets the answer', async () => {
    server = await startTestServer()
    const { apiKey } = await server.load(smallFixture())
    const body = Buffer.alloc(8 * 1024 * 1024, 'x')
    for (const contentType of ['text/plain;charset=UTF-8', 'application/xml'])
      for (const response of await answersSentWhole(server.url, wholeUpsert(apiKey, body.length, contentType), body)) {
        expect(response).toMatch(/^HTTP\/1\.1 400 /)
        expect(response).toContain('"resource":"Content-Type"')
      }
  })
})

/** The head of a record upsert with `key`, but its length and Expect header. */
const post = (key: string) =>
  `POST /v1/tables/deals/records/bulk HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nConnection: close\r\nX-API-Key: ${key}\r\n`

describe('a client that waits for 100 Continue (Expect: 100-continue, as curl sends a body over 1 MiB)', () => {
  let server: TestServer
  let apiKey: string

  afterEach(() => server.close())

  /** Sends a request's head with `Expect: 100-continue`, and its body only once 100 Continue has come, as curl does. */
  async function expectingContinue(head: string, body: string): Promise<{ received: string; sentBody: boolean }> {
    const socket = connect(Number(new URL(server.url).port), '127.0.0.1')
    await once(socket, 'connect')
    let received = ''
    let sentBody = false
    socket.on('data', (chunk) => {
      received += chunk.toString()
      if (!sentBody && received.startsWith('HTTP/1.1 100 Continue\r\n\r\n')) {
        sentBody = true
        socket.write(body)
      }
    })
    socket.write(`${head}Expect: 100-continue\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`)
    await once(socket, 'close')
    return { received, sentBody }
  }

  it('gets 100 Continue when its body is read, then the answer', async () => {
    server = await startTestServer()
    ;({ apiKey } = await server.load(smallFixture()))
    const { received, sentBody } = await expectingContinue(
      post(apiKey),
      JSON.stringify([{ deal_id: 'D-100', amount: 1, amount_currency: 'EUR' }]),
    )
    expect(sentBody).toBe(true)
    expect(received).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /)
    expect(JSON.parse(received.slice(received.lastIndexOf('\r\n\r\n') + 4))).toEqual({ import_id: expect.any(String), objects_imported: 1 })
  })

  it('is refused without being asked for its body: over the limit by its Content-Length, or without a key', async () => {
    server = await startTestServer({ BODY_LIMIT_MB: '1' })
    ;({ apiKey } = await server.load(smallFixture()))
    const large = `[${'"x",'.repeat(300_000)}"x"]`
    const tooLarge = await expectingContinue(post(apiKey), large)
    expect(tooLarge.sentBody).toBe(false)
    expect(tooLarge.received).toMatch(/^HTTP\/1\.1 413 /)
    expect(JSON.parse(tooLarge.received.slice(tooLarge.received.indexOf('\r\n\r\n') + 4))).toEqual({
      count: 1,
      errors: [{ error: 'ValidationError', resource: 'body', description: expect.any(String) }],
    })
    const unknownKey = await expectingContinue(post('cak_not-a-key-of-anyone-at-all'), '[]')
    expect(unknownKey.sentBody).toBe(false)
    expect(unknownKey.received).toMatch(/^HTTP\/1\.1 401 /)
  })

  it("that sends its body without waiting for it (RFC 9110 allows it, as Node's client does) gets the 413, not a reset", async () => {
    server = await startTestServer({ BODY_LIMIT_MB: '1' })
    ;({ apiKey } = await server.load(smallFixture()))
    const body = Buffer.alloc(4 * 1024 * 1024, 'x')
    const head = `${post(apiKey)}Expect: 100-continue\r\nContent-Length: ${body.length}\r\n\r\n`
    for (const response of await answersSentWhole(server.url, head, body)) expect(response).toMatch(/^HTTP\/1\.1 413 /)
  })

  it('whose body is never read, its client gone before the answer, leaves the server running', async () => {
    const running = startServerProcess({ DATA_DIR: tempDataDir() })
    try {
      const [, url] = await running.waitFor(/listening on (http:\/\/\S+)/)
      for (let attempt = 0; attempt < 30; attempt++) {
        const socket = connect(Number(new URL(url).port), '127.0.0.1')
        await once(socket, 'connect')
        socket.on('error', () => {})
        // A GET with a length: nothing reads its body. No key needed.
        socket.write('GET /openapi.json HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n')
        await new Promise((resolve) => setTimeout(resolve, attempt % 6))
        socket.resetAndDestroy()
      }
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect((await call(`${url}/health/live`)).status).toBe(200)
      expect(running.child.exitCode).toBeNull()
    } finally {
      await running.stop()
    }
  })

  it('sent in chunks past the limit, its client gone while the rest is read, leaves the server running', async () => {
    const running = startServerProcess({ DATA_DIR: tempDataDir(), BODY_LIMIT_MB: '1' })
    try {
      const [, url] = await running.waitFor(/listening on (http:\/\/\S+)/)
      const key = (await running.waitFor(/(cak_[\w-]+)/))[1]
      const socket = connect(Number(new URL(url).port), '127.0.0.1')
      await once(socket, 'connect')
      socket.on('error', () => {})
      socket.write(`${post(key)}Expect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n`)
      await new Promise((resolve) => setTimeout(resolve, 100))
      const chunk = Buffer.alloc(64 * 1024, 'x')
      for (let index = 0; index < 20; index++)
        socket.write(Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]))
      await new Promise((resolve) => setTimeout(resolve, 300))
      // Past the limit: the rest is being read when the client leaves.
      socket.resetAndDestroy()
      await new Promise((resolve) => setTimeout(resolve, 500))
      expect((await call(`${url}/health/live`)).status).toBe(200)
      expect(running.child.exitCode).toBeNull()
    } finally {
      await running.stop()
    }
  })
})
