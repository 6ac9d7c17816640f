import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { smallFixture } from './helpers/fixtures.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'

describe('GET /v2/data-structures', () => {
  let server: TestServer
  let acme: { companyId: string; apiKey: string }
  let globex: { companyId: string; apiKey: string }

  beforeAll(async () => {
    server = await startTestServer()
    acme = await server.load(smallFixture('Acme'))
    globex = await server.load(smallFixture('Globex'))
  })
  afterAll(() => server.close())

  it('lists every live structure of the key company with absolute links, and no sandbox one', async () => {
    const reply = await server.call('/v2/data-structures', { key: acme.apiKey })
    expect(reply.status).toBe(200)
    const inventory = [...(await server.store.structures.list(acme.companyId)), ...(await server.store.quotas.list(acme.companyId))]
    const id = (name: string) => inventory.find((item) => item.name === name)!.id
    const base = server.url
    expect(reply.body).toEqual({
      data: [
        {
          id: id('Statements'),
          name: 'Statements',
          type: 'statement_reporting',
          total_records: 3,
          links: {
            fields: `${base}/v2/data-structures/${id('Statements')}/fields`,
            records: `${base}/v2/reporting/${id('Statements')}/statements`,
          },
        },
        {
          id: id('Deal commissions'),
          name: 'Deal commissions',
          type: 'record_reporting',
          total_records: 2,
          links: {
            fields: `${base}/v2/data-structures/${id('Deal commissions')}/fields`,
            records: `${base}/v2/reporting/${id('Deal commissions')}/records`,
          },
        },
        {
          id: id('Monthly bookings'),
          name: 'Monthly bookings',
          type: 'quota',
          total_records: 3,
          status: 'active',
          links: {
            fields: `${base}/v2/data-structures/${id('Monthly bookings')}/fields`,
            records: `${base}/v2/quotas/${id('Monthly bookings')}/values`,
          },
        },
        {
          id: id('Quarterly attainment'),
          name: 'Quarterly attainment',
          type: 'quota',
          total_records: 1,
          status: 'active',
          links: {
            fields: `${base}/v2/data-structures/${id('Quarterly attainment')}/fields`,
            records: `${base}/v2/quotas/${id('Quarterly attainment')}/values`,
          },
        },
        {
          id: id('Old target'),
          name: 'Old target',
          type: 'quota',
          total_records: 1,
          status: 'archived',
          links: {
            fields: `${base}/v2/data-structures/${id('Old target')}/fields`,
            records: `${base}/v2/quotas/${id('Old target')}/values`,
          },
        },
      ],
    })
    expect(JSON.stringify(reply.body)).not.toContain('Sandbox')
  })

  it('never shows another company’s structures (tenant isolation)', async () => {
    const [mine, theirs] = await Promise.all([
      server.call('/v2/data-structures', { key: acme.apiKey }),
      server.call('/v2/data-structures', { key: globex.apiKey }),
    ])
    const mineIds = new Set(mine.body.data.map((entry: { id: string }) => entry.id))
    const theirIds: string[] = theirs.body.data.map((entry: { id: string }) => entry.id)
    expect(theirIds).toHaveLength(5)
    for (const id of theirIds) expect(mineIds.has(id)).toBe(false)
    const globexIds = [...(await server.store.structures.list(globex.companyId)), ...(await server.store.quotas.list(globex.companyId))]
      .filter((item) => item.environment === 'live')
      .map((item) => item.id)
    expect(theirIds.toSorted()).toEqual(globexIds.toSorted())
  })

  it('writes links from PUBLIC_URL when it is set', async () => {
    const behindProxy = await startTestServer({ PUBLIC_URL: 'https://api.example.com/' })
    try {
      const { apiKey } = await behindProxy.load(smallFixture())
      const reply = await behindProxy.call('/v2/data-structures', { key: apiKey })
      for (const entry of reply.body.data)
        expect(entry.links.fields).toMatch(/^https:\/\/api\.example\.com\/v2\/data-structures\/[0-9a-f]{24}\/fields$/)
    } finally {
      await behindProxy.close()
    }
  })

  it('uses the forwarded scheme (http or https, the last one) and host only behind a trusted proxy', async () => {
    const headers = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'lb.example.com' }
    const untrusted = await server.call('/v2/data-structures', { key: acme.apiKey, headers })
    expect(untrusted.body.data[0].links.fields.startsWith(server.url)).toBe(true)
    const trusting = await startTestServer({ TRUST_PROXY: 'on' })
    try {
      const { apiKey } = await trusting.load(smallFixture())
      const reply = await trusting.call('/v2/data-structures', { key: apiKey, headers })
      expect(reply.body.data[0].links.fields.startsWith('https://lb.example.com/v2/')).toBe(true)
      // A forwarded scheme is http or https: anything else would put another host or scheme in every link.
      for (const proto of ['https://evil.example/', 'javascript', 'ftp', 'https:']) {
        const refused = await trusting.call('/v2/data-structures', { key: apiKey, headers: { ...headers, 'x-forwarded-proto': proto } })
        expect(refused.status, proto).toBe(400)
        expect(refused.body.errors, proto).toEqual([
          { error: 'ValidationError', resource: 'X-Forwarded-Proto', description: 'expected http or https' },
        ])
      }
      const plain = await trusting.call('/v2/data-structures', { key: apiKey, headers: { ...headers, 'x-forwarded-proto': 'https, http' } })
      expect(plain.body.data[0].links.fields.startsWith('http://lb.example.com/v2/')).toBe(true)
      // A scheme is read in any letter case, and written in small letters.
      const capitals = await trusting.call('/v2/data-structures', { key: apiKey, headers: { ...headers, 'x-forwarded-proto': 'HTTPS' } })
      expect(capitals.body.data[0].links.fields.startsWith('https://lb.example.com/v2/')).toBe(true)
    } finally {
      await trusting.close()
    }
  })
})
