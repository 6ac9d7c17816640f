import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { isValidHost } from '../src/routes/host-header.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { KIT_DEMO_KEY, type KitServer, startKitServer, until } from './helpers/kit-server.ts'
import { exchange, openConnection, statusesIn } from './helpers/raw-http.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'

const validationFamily = (resource: string) => ({
  count: 1,
  errors: [{ error: 'ValidationError', resource, description: expect.any(String) }],
})

/** Writes raw bytes to the server and reads everything it answers until it closes the connection. */
async function rawExchange(url: string, bytes: string): Promise<{ status: number; headers: string; body: string }> {
  const [head, body = ''] = (await exchange(url, bytes)).split('\r\n\r\n')
  return { status: Number(head.split(' ')[1]), headers: head, body }
}

describe('hostile HTTP: every refusal in the documented bodies', () => {
  let server: TestServer
  let key: string
  beforeAll(async () => {
    server = await startTestServer()
    key = (await server.load(smallFixture())).apiKey
  })
  afterAll(() => server.close())

  it('a malformed percent-encoding in the path is a 400 naming the path', async () => {
    for (const path of ['/v2/data-structures/%zz/fields', '/v1/tables/%E0%A4%A/records', '/v2/data-structures%']) {
      const reply = await server.call(path, { key, headers: { 'x-request-id': 'bad-url' } })
      expect(reply.status, path).toBe(400)
      expect(reply.body, path).toEqual(validationFamily('path'))
      expect(reply.headers['x-request-id']).toBe('bad-url')
    }
  })

  it('an over-long path parameter is a 414 with the 400-family body', async () => {
    const reply = await server.call(`/v2/data-structures/${'a'.repeat(101)}/fields`, { key })
    expect(reply.status).toBe(414)
    expect(reply.body).toEqual(validationFamily('path'))
    // 100 characters are still read, and name nothing.
    expect((await server.call(`/v2/data-structures/${'a'.repeat(100)}/fields`, { key })).status).toBe(404)
  })

  it('logs and counts these refusals as every answered request: one request line, one sample of the metrics', async () => {
    const metricOf = async (status: string) => {
      const text = (await server.call('/metrics')).text
      const line = text
        .split('\n')
        .find(
          (sample) =>
            sample.startsWith('commission_api_http_requests_total{') &&
            sample.includes(`status_code="${status}"`) &&
            sample.includes('route="unmatched"'),
        )
      return line ? Number(line.split(' ').at(-1)) : 0
    }
    const before = { 400: await metricOf('400'), 414: await metricOf('414') }
    await server.call('/v2/data-structures/%zz/fields', { key, headers: { 'x-request-id': 'logged-bad-url' } })
    await server.call(`/v2/data-structures/${'a'.repeat(101)}/fields`, { key, headers: { 'x-request-id': 'logged-long-param' } })
    expect(await metricOf('400')).toBe(before[400] + 1)
    expect(await metricOf('414')).toBe(before[414] + 1)
    const lines = server.logs.filter((line) => line.msg === 'request')
    const linesOf = (id: string) => lines.filter((line) => line.request_id === id)
    expect(linesOf('logged-bad-url')).toEqual([expect.objectContaining({ res: { statusCode: 400 } })])
    expect(linesOf('logged-long-param')).toEqual([expect.objectContaining({ res: { statusCode: 414 } })])
    expect(lines.find((line) => line.request_id === 'logged-bad-url')?.responseTime).toEqual(expect.any(Number))

    // What the HTTP parser refuses is counted too, by its status; its method is not known.
    const unparsed = async () => {
      const text = (await server.call('/metrics')).text
      const line = text.split('\n').find((sample) => sample.startsWith('commission_api_http_requests_total{method="unparsed"'))
      return line ? Number(line.split(' ').at(-1)) : 0
    }
    const countedBefore = await unparsed()
    expect((await rawExchange(server.url, 'GARBAGE\r\n\r\n')).status).toBe(400)
    expect(await unparsed()).toBe(countedBefore + 1)
  })

  it('a wrong method on a known path is a 405 with Allow and a body of the 404 family', async () => {
    const reply = await server.call('/v2/data-structures', { method: 'DELETE', key })
    expect(reply.status).toBe(405)
    expect(reply.headers.allow).toBe('GET, HEAD')
    expect(reply.body).toEqual({ message: expect.any(String), resource: 'method', type: 'MethodNotAllowedError' })
    const put = await server.call('/v1/tables/deals/records/bulk', { method: 'PUT', key, body: [] })
    expect(put.status).toBe(405)
    expect(put.headers.allow).toBe('POST')
    const users = await server.call('/v1/users/bulk', { method: 'POST', key, body: { data: [] } })
    expect(users.headers.allow).toBe('PUT')
    // An unknown path stays a 404, and so does a known one with a trailing slash, as it is under GET.
    expect((await server.call('/v2/nothing-here', { method: 'DELETE', key })).status).toBe(404)
    expect((await server.call('/v2/data-structures/', { key })).status).toBe(404)
    expect((await server.call('/v2/data-structures/', { method: 'DELETE', key })).status).toBe(404)
    // A known path with percent-encoded letters is the path the router serves under GET.
    expect((await server.call('/%762/data-structures', { key })).status).toBe(200)
    const encoded = await server.call('/%762/data-structures', { method: 'DELETE', key })
    expect(encoded.status).toBe(405)
    expect(encoded.headers.allow).toBe('GET, HEAD')

    // A target in absolute form is its path: a 405 as above, and a 404 naming the path alone.
    const absolute = await rawExchange(
      server.url,
      `DELETE ${server.url}/v2/data-structures HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${key}\r\nConnection: close\r\n\r\n`,
    )
    expect(absolute.status).toBe(405)
    expect(absolute.headers).toMatch(/\r\nallow: GET, HEAD\r\n/i)
    const unknown = await rawExchange(
      server.url,
      `GET ${server.url}/v2/nothing-here HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${key}\r\nConnection: close\r\n\r\n`,
    )
    expect(unknown.status).toBe(404)
    expect(JSON.parse(unknown.body).message).toBe('No route GET /v2/nothing-here')
  })

  it('oversized headers are a 431 with the 400-family body', async () => {
    const reply = await rawExchange(
      server.url,
      `GET /v2/data-structures HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    )
    expect(reply.status).toBe(431)
    expect(JSON.parse(reply.body)).toEqual(validationFamily('headers'))
  })

  it('malformed HTTP is a 400 with the documented body, logged without a stack', async () => {
    const before = server.logs.length
    for (const bytes of ['GET /v2/data-structures HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n', 'GARBAGE\r\n\r\n']) {
      const reply = await rawExchange(server.url, bytes)
      expect(reply.status).toBe(400)
      expect(JSON.parse(reply.body)).toEqual(validationFamily('request'))
    }
    expect(server.logs.slice(before).filter((line) => (line.level as number) >= 40)).toEqual([])
  })

  it('a chunked request with a broken chunk size logs one line at most, and no stack', async () => {
    const before = server.logs.length
    const reply = await rawExchange(
      server.url,
      `POST /v1/tables/deals/records/bulk HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\n` +
        'Transfer-Encoding: chunked\r\n\r\nzz\r\n[]\r\n0\r\n\r\n',
    )
    expect(reply.status).toBe(400)
    expect(JSON.parse(reply.body)).toEqual(validationFamily('request'))
    await new Promise((resolve) => setTimeout(resolve, 200))
    const lines = server.logs.slice(before)
    expect(lines.length).toBeLessThanOrEqual(1)
    expect(JSON.stringify(lines)).not.toContain('stack')
  })

  it('refuses a Host header that is not a valid host[:port], so that no link is built from it', async () => {
    for (const host of ['evil.example/<x>', 'a b', 'example.com:99999', 'user@example.com', '[zz::1]', 'x"y']) {
      const reply = await rawExchange(
        server.url,
        `GET /v2/data-structures HTTP/1.1\r\nHost: ${host}\r\nX-API-Key: ${key}\r\nConnection: close\r\n\r\n`,
      )
      expect(reply.status, host).toBe(400)
      expect(JSON.parse(reply.body), host).toEqual(validationFamily('Host'))
    }
    const fine = await server.call('/v2/data-structures', { key, headers: { host: 'api.example.com:8080' } })
    expect(fine.status).toBe(200)
    expect(fine.body.data[0].links.fields).toMatch(/^http:\/\/api\.example\.com:8080\/v2\//)
    // Node keeps the first of two; a proxy in front may have routed by the other.
    for (const hosts of ['Host: localhost\r\nHost: evil.example', 'host: evil.example\r\nHOST: localhost']) {
      const reply = await rawExchange(
        server.url,
        `GET /v2/data-structures HTTP/1.1\r\n${hosts}\r\nX-API-Key: ${key}\r\nConnection: close\r\n\r\n`,
      )
      expect(reply.status, hosts).toBe(400)
      expect(JSON.parse(reply.body), hosts).toEqual(validationFamily('Host'))
    }
  })

  it('answers in the documented bodies what Node would answer alone: HTTP/1.1 without Host, an unknown Expect, CONNECT', async () => {
    const noHost = await rawExchange(server.url, `GET /v1/users?limit=1 HTTP/1.1\r\nX-API-Key: ${key}\r\nConnection: close\r\n\r\n`)
    expect(noHost.status).toBe(400)
    expect(JSON.parse(noHost.body)).toEqual(validationFamily('Host'))
    const expectation = await rawExchange(
      server.url,
      `GET /v1/users HTTP/1.1\r\nHost: localhost\r\nExpect: foo\r\nX-API-Key: ${key}\r\nConnection: close\r\n\r\n`,
    )
    expect(expectation.status).toBe(417)
    expect(JSON.parse(expectation.body)).toEqual(validationFamily('Expect'))
    const tunnel = await rawExchange(server.url, 'CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n')
    expect(tunnel.status).toBe(405)
    expect(JSON.parse(tunnel.body)).toEqual({ message: expect.any(String), resource: 'method', type: 'MethodNotAllowedError' })
  })

  it('stays up when the client of a CONNECT resets its connection around the answer', async () => {
    const { port } = new URL(server.url)
    for (let attempt = 0; attempt < 20; attempt++) {
      const socket = connect(Number(port), '127.0.0.1')
      socket.on('error', () => {})
      await new Promise((resolve) => socket.once('connect', resolve))
      socket.write('CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n')
      await new Promise((resolve) => setImmediate(resolve))
      socket.resetAndDestroy()
    }
    expect((await server.call('/health/live')).status).toBe(200)
  })

  it('builds the links of a request that names no host (HTTP/1.0) from the address its connection came to', async () => {
    const { host } = new URL(server.url)
    for (const hostLine of ['', 'Host: \r\n']) {
      const reply = await rawExchange(server.url, `GET /v1/users?limit=1 HTTP/1.0\r\n${hostLine}X-API-Key: ${key}\r\n\r\n`)
      expect(reply.status, hostLine).toBe(200)
      expect(JSON.parse(reply.body).next, hostLine).toBe(`http://${host}/v1/users?offset=1&limit=1`)
    }
  })

  it('logs the values of the interface parameters only, whatever name a secret hides under', async () => {
    const secret = 'cak_hidden-in-a-query-string'
    for (const name of ['password', 'auth', 'k', 'api_key', 'token'])
      await server.call(`/v2/data-structures?limit=5&${name}=${secret}`, { key })
    const lines = server.logs.filter((line) => String((line.req as { url?: string } | undefined)?.url).startsWith('/v2/data-structures?'))
    expect(lines.length).toBeGreaterThanOrEqual(5)
    expect(server.rawLogs()).not.toContain(secret)
    expect((lines.at(-1)!.req as { url: string }).url).toBe('/v2/data-structures?limit=5&token=%5BRedacted%5D')
  })

  it("logs the values of the admin routes' parameters, and no other", async () => {
    await server.call('/admin/companies/x/requests?method=GET&status=200&since=2026-01-01T00:00:00Z&path_prefix=/v1&token=s')
    await server.call('/admin/companies/x/imports/drain?timeout_ms=1000', { method: 'POST' })
    const urls = server.logs.map((line) => (line.req as { url?: string } | undefined)?.url)
    expect(urls).toEqual(
      expect.arrayContaining([
        '/admin/companies/x/requests?method=GET&status=200&since=2026-01-01T00%3A00%3A00Z&path_prefix=%2Fv1&token=%5BRedacted%5D',
        '/admin/companies/x/imports/drain?timeout_ms=1000',
      ]),
    )
  })

  it('logs a URL of thousands of parameter names with each unknown name once, redacted, and the known ones as sent', async () => {
    const names = Array.from({ length: 2000 }, (_, index) => `p${index}`)
    const reply = await server.call(`/health/live?${names.join('&')}&limit=1&p7=again&limit=2`, {
      headers: { 'x-request-id': 'many-names' },
    })
    expect(reply.status).toBe(200)
    const url = (server.logs.find((line) => line.request_id === 'many-names')!.req as { url: string }).url
    const logged = [...new URLSearchParams(url.slice(url.indexOf('?') + 1))]
    expect(logged).toEqual([...names.map((name) => [name, '[Redacted]']), ['limit', '1'], ['limit', '2']])
  })

  it("logs no API key put under an interface parameter's name or in the path, of the service's form or the one presented", async () => {
    const other = 'cak_another-key-of-the-service'
    await server.call(`/v2/data-structures?start_id=${other}&limit=5`, { key })
    await server.call(`/v1/users?limit=1&offset=${key}`, { key })
    await server.call(`/v1/tables/${other}/records?limit=1`, { key })
    await server.call(`/v1/tables/x${key}y/records`, { key })
    // Percent-encoded in the path, which keeps its encoding: `%63` is `c`, `%5F` is `_`.
    await server.call(`/v1/tables/%63ak_another-key-of-the-service/records?limit=2`, { key })
    await server.call(`/v1/tables/${key.replace('_', '%5F')}/records?limit=3`, { key })
    // Beside a bad escape, which makes the path a 400 (logged too) and not valid percent-encoding as a whole.
    await server.call(`/v1/tables/%63ak_another-key-of-the-service/records%zz`, { key })
    // As a query parameter's name, plain or percent-encoded.
    await server.call(`/v1/users?limit=4&${key}=1`, { key })
    await server.call(`/v1/users?limit=5&cak%5Fanother-key-of-the-service=x`, { key })
    const urls = server.logs.map((line) => (line.req as { url?: string } | undefined)?.url).filter((url) => url !== undefined)
    expect(server.rawLogs()).not.toContain(other)
    expect(server.rawLogs()).not.toContain(key)
    expect(server.rawLogs()).not.toContain('another-key-of-the-service')
    expect(urls).toEqual(
      expect.arrayContaining([
        '/v2/data-structures?start_id=%5BRedacted%5D&limit=5',
        '/v1/users?limit=1&offset=%5BRedacted%5D',
        '/v1/tables/[Redacted]/records?limit=1',
        '/v1/tables/[Redacted]/records',
        '/v1/tables/[Redacted]/records?limit=2',
        '/v1/tables/[Redacted]/records?limit=3',
        '/v1/tables/[Redacted]/records%zz',
        '/v1/users?limit=4&%5BRedacted%5D=%5BRedacted%5D',
        '/v1/users?limit=5&%5BRedacted%5D=%5BRedacted%5D',
      ]),
    )
  })
})

describe('requests read before a malformed one on the same connection', () => {
  let server: TestServer
  let key: string
  let companyId: string
  beforeAll(async () => {
    server = await startTestServer()
    ;({ apiKey: key, companyId } = await server.load(smallFixture()))
  })
  afterAll(() => server.close())

  /** The status of every answer the connection carried, in order, once the server has closed it. */
  const statusesOf = async (bytes: string) => statusesIn(await exchange(server.url, bytes))
  const upsert = (requestId: string, extraHeaders = '') => {
    const body = JSON.stringify({ data: [{ email: `${requestId}@acme.example`, name: 'Pipelined' }] })
    return (
      `PUT /v1/users/bulk HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${key}\r\nX-Request-Id: ${requestId}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extraHeaders}\r\n${body}`
    )
  }
  const importCount = async () => (await server.store.imports.list(companyId, { limit: 1000 })).length
  const get = (path: string, extraHeaders = '') => `GET ${path} HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${key}\r\n${extraHeaders}\r\n`

  it('an upsert that asked to close the connection is answered 200 and logged, and what follows it is dropped', async () => {
    const before = await importCount()
    expect(await statusesOf(`${upsert('closing-upsert', 'Connection: close\r\n')}${get('/v1/users?limit=1')}`)).toEqual([200])
    expect(await importCount()).toBe(before + 1)
    expect(server.logs.filter((line) => line.msg === 'request' && line.request_id === 'closing-upsert')).toEqual([
      expect.objectContaining({ res: { statusCode: 200 } }),
    ])
  })

  it('an upsert whose client goes away before its answer is logged all the same, with no status, once', async () => {
    const before = await importCount()
    const { hostname, port } = new URL(server.url)
    const socket = connect(Number(port), hostname, () => {
      socket.write(upsert('gone-before-answer'))
      socket.destroy()
    })
    await until(importCount, (count) => count === before + 1)
    const linesOf = () => server.logs.filter((line) => line.request_id === 'gone-before-answer' && line.level === 30)
    await until(
      async () => linesOf().length,
      (count) => count > 0,
    )
    // Its handler runs on after the line: give it time to finish, and Fastify time to log it again if it would.
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(linesOf()).toEqual([
      expect.objectContaining({
        msg: 'request closed before its answer',
        req: expect.objectContaining({ method: 'PUT' }),
        res: { statusCode: null },
      }),
    ])
  })

  it('an upsert followed by bytes that are not HTTP is answered 200, then the bytes 400', async () => {
    const before = await importCount()
    expect(await statusesOf(`${upsert('upsert-then-garbage')}GARBAGE / HTTP/1.1\r\n\r\n`)).toEqual([200, 400])
    expect(await importCount()).toBe(before + 1)
  })

  it('every pipelined request before the one that closes the connection is answered, in order', async () => {
    const reads = Array.from({ length: 5 }, () => get('/v1/users?limit=1')).join('')
    expect(await statusesOf(`${reads}${get('/v2/nothing-here', 'Connection: close\r\n')}${get('/v1/users?limit=1')}`)).toEqual([
      200, 200, 200, 200, 200, 404,
    ])
    expect(await statusesOf(`${reads}GARBAGE\r\n\r\n`)).toEqual([200, 200, 200, 200, 200, 400])
  })
})

describe('a CONNECT, once answered', () => {
  let server: KitServer
  afterAll(() => server?.close())

  it('is closed by the service, whether its client sent bytes after it or keeps its own side open', async () => {
    server = await startKitServer()
    const port = Number(new URL(server.url).port)
    const openConnections = () =>
      new Promise<number>((resolve, reject) =>
        server.running.app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
      )
    for (const after of ['tunnelled bytes sent at once', '']) {
      // A client that never ends its side itself: only the service can end the connection.
      const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true })
      socket.on('error', () => {})
      let received = ''
      socket.on('data', (chunk: Buffer) => (received += chunk.toString()))
      await new Promise((resolve) => socket.once('connect', resolve))
      socket.write(`CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n${after}`)
      await new Promise((resolve) => socket.once('end', resolve))
      expect(statusesIn(received), after).toEqual([405])
      // Left open, such a connection stayed for good, and held the instance's stop past SHUTDOWN_TIMEOUT_MS.
      expect(await until(openConnections, (count) => count === 0, 2000), after).toBe(0)
      socket.destroy()
    }
  })
})

describe('malformed HTTP behind an answer that is slow to come', () => {
  let server: KitServer
  afterAll(() => server?.close())

  it('reads nothing more from the connection, and closes it at REQUEST_TIMEOUT_MS if the answer has not come', async () => {
    server = await startKitServer({ REQUEST_TIMEOUT_MS: '1000' })
    const delayed = await server.admin(`/admin/companies/${server.demoId}/faults`, {
      method: 'POST',
      body: { method: 'GET', path: '/v1/users', delay_ms: 1500, times: 2 },
    })
    expect(delayed.status).toBe(201)
    const warnings: string[] = []
    const onWarning = (warning: Error) => warnings.push(warning.name)
    process.on('warning', onWarning)
    try {
      const read = `GET /v1/users?limit=1 HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${KIT_DEMO_KEY}\r\n\r\n`
      // Garbage in many chunks behind the slow answer: each would be parsed, and fail, again.
      const { socket, received } = await openConnection(Number(new URL(server.url).port))
      // Closed with bytes unread, the connection is reset: that is its end here, as a close is.
      const closed = new Promise((resolve) => socket.once('close', resolve))
      socket.on('error', () => {})
      socket.write(`${read}GARBAGE\r\n\r\n`)
      for (let chunk = 0; chunk < 40; chunk++) socket.write('more garbage\r\n')
      await closed
      // The answer came after 1.5 s, past the bound of 1 s: the connection was closed without it, and without the 400.
      expect(statusesIn(received())).toEqual([])
      expect(warnings).not.toContain('MaxListenersExceededWarning')
    } finally {
      process.off('warning', onWarning)
    }
  })
})

describe('a request sent too slowly', () => {
  it('is answered 408 once REQUEST_TIMEOUT_MS has passed, and its connection closed', async () => {
    const server = await startTestServer({ REQUEST_TIMEOUT_MS: '1000' })
    try {
      const { apiKey } = await server.load(smallFixture())
      // A body announced as 100 bytes of which 10 ever come.
      const started = Date.now()
      const answer = await rawExchange(
        server.url,
        `PUT /v1/users/bulk HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${apiKey}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"data": [`,
      )
      expect(answer.status).toBe(408)
      expect(JSON.parse(answer.body)).toEqual(validationFamily('request'))
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000)
      // The company's turn to upsert was given back: its next call is answered.
      const next = await server.call('/v1/users/bulk', { method: 'PUT', key: apiKey, body: { data: [{ email: 'next@acme.example' }] } })
      expect(next.status).toBe(200)
    } finally {
      await server.close()
    }
  })
})

describe('isValidHost', () => {
  it.each(['localhost', 'localhost:3000', 'api.example.com', 'api-1', 'api_1:80', '127.0.0.1:8080', '[::1]', '[::1]:3000', 'example.com.'])(
    'accepts %s',
    (host) => {
      expect(isValidHost(host)).toBe(true)
    },
  )
  it.each(['', 'a/b', 'a b', 'a:b', 'a:123456', '-a.example', '[::1', '::1', 'x@y', 'a..b', `${'a'.repeat(64)}.example`])(
    'refuses %s',
    (host) => {
      expect(isValidHost(host)).toBe(false)
    },
  )
  it('remembers only the last valid host: the next request with another host is checked whole', () => {
    expect(isValidHost('api.example.com:8080')).toBe(true)
    expect(isValidHost('api.example.com:8080')).toBe(true)
    expect(isValidHost('api.example.com:80800')).toBe(false)
    expect(isValidHost('')).toBe(false)
  })
})
