import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib'
import { request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { smallFixture } from './helpers/fixtures.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'

describe('response compression, when the client asks for it', () => {
  let server: TestServer
  let key: string
  let statementsPath: string

  beforeAll(async () => {
    server = await startTestServer()
    const fixture = smallFixture()
    // Enough users for a page over the 1 KiB under which a body is sent as it is.
    fixture.users = [
      ...fixture.users!,
      ...Array.from({ length: 30 }, (_, index) => ({ email: `rep${index}@acme.example`, name: `Rep ${index}` })),
    ]
    ;({ apiKey: key } = await server.load(fixture))
    const discovery = await server.call('/v2/data-structures', { key })
    const structure = discovery.body.data.find((entry: { type: string }) => entry.type === 'statement_reporting')
    statementsPath = new URL(structure.links.records).pathname
  })
  afterAll(() => server.close())

  async function fetch(path: string, headers: Record<string, string>) {
    const response = await request(server.url + path, { headers: { 'x-api-key': key, ...headers } })
    return { status: response.statusCode, headers: response.headers, bytes: Buffer.from(await response.body.arrayBuffer()) }
  }

  it.each([
    ['gzip', gunzipSync],
    ['br', brotliDecompressSync],
  ])('answers %s to Accept-Encoding naming it, with the bytes it answers uncompressed', async (encoding, decompress) => {
    for (const path of ['/docs/json', '/v1/users']) {
      const plain = await fetch(path, {})
      const compressed = await fetch(path, { 'accept-encoding': encoding })
      expect(plain.headers['content-encoding']).toBeUndefined()
      expect(compressed.status).toBe(200)
      expect(compressed.headers['content-encoding']).toBe(encoding)
      expect(compressed.headers.vary).toMatch(/accept-encoding/i)
      expect(decompress(compressed.bytes).equals(plain.bytes)).toBe(true)
      expect(compressed.bytes.length).toBeLessThan(plain.bytes.length / 2)
    }
  })

  it('prefers br when the client takes both, and sends a small body as it is', async () => {
    expect((await fetch('/v1/users', { 'accept-encoding': 'gzip, br' })).headers['content-encoding']).toBe('br')
    for (const path of ['/health/live', statementsPath]) {
      const small = await fetch(path, { 'accept-encoding': 'gzip, br' })
      expect(small.status).toBe(200)
      expect(small.bytes.length).toBeLessThan(1024)
      expect(small.headers['content-encoding']).toBeUndefined()
    }
  })

  it('compresses error bodies of the interface too, and keeps their shape', async () => {
    const refused = await request(`${server.url}/v1/users?limit=1`, { headers: { 'accept-encoding': 'gzip' } })
    const bytes = Buffer.from(await refused.body.arrayBuffer())
    expect(refused.statusCode).toBe(401)
    const text = refused.headers['content-encoding'] === 'gzip' ? gunzipSync(bytes).toString() : bytes.toString()
    expect(JSON.parse(text)).toEqual({ message: expect.any(String), type: 'UnauthorizedError' })
  })

  it('does not decompress request bodies: a gzipped upload is refused, naming Content-Encoding', async () => {
    const reply = await request(`${server.url}/v1/users/bulk`, {
      method: 'PUT',
      headers: { 'x-api-key': key, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(JSON.stringify({ data: [{ email: 'new@acme.example' }] })),
    })
    expect(reply.statusCode).toBe(400)
    expect(await reply.body.json()).toMatchObject({ count: 1, errors: [expect.objectContaining({ resource: 'Content-Encoding' })] })
  })
})
