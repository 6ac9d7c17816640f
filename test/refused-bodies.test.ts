import { once } from 'node:events'
import { connect } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { smallFixture } from './helpers/fixtures.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'

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

describe('a body over the limit', () => {
  let server: TestServer

  afterEach(() => server.close())

  it('is read to its end before the 413, so that a client (or a proxy) still sending it gets the answer, not a reset', async () => {
    server = await startTestServer()
    const { apiKey } = await server.load(smallFixture())
    // Over the service's limit (BODY_LIMIT_MB, 32 MiB by default).
    const body = Buffer.alloc(34 * 1024 * 1024, 'x')
    for (let attempt = 0; attempt < 3; attempt++) {
      const head =
        'POST /v1/tables/deals/records/bulk HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
        `X-API-Key: ${apiKey}\r\nContent-Length: ${body.length}\r\n\r\n`
      const { response, error } = await sendWhole(server.url, head, body)
      expect(error).toBeNull()
      expect(response).toMatch(/^HTTP\/1\.1 413 /)
      expect(JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4))).toEqual({
        count: 1,
        errors: [{ error: 'ValidationError', resource: 'body', description: expect.any(String) }],
      })
    }
  })
})
