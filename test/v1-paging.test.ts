import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { aCommissionLine, aRecord, aStatement, aUser } from './store/builders.ts'
import { type TestServer, startTestServer } from './helpers/server.ts'
import { v1Fixture } from './helpers/v1-fixture.ts'

/** The paging rules every v1 list shares, checked on each of the four lists. */

interface List {
  name: string
  /** The list's path, once the company is loaded. */
  path: () => string
  /** How many rows the company has in it. */
  rows: number
}

/** The 400 body of the specification, naming one parameter. */
const validationBody = (resource: string) => ({
  count: 1,
  errors: [{ error: 'ValidationError', resource, description: expect.any(String) }],
})

describe('v1 lists: offset, limit, count and next', () => {
  let server: TestServer
  let apiKey: string
  let dealsId: string

  const LISTS: List[] = [
    { name: 'GET /v1/users', path: () => '/v1/users', rows: 6 },
    { name: 'GET /v1/tables/{data_table_key}/records', path: () => '/v1/tables/deals/records', rows: 6 },
    { name: 'GET /v1/reporting', path: () => '/v1/reporting', rows: 6 },
    { name: 'GET /v1/reporting/{data_table_id}/records', path: () => `/v1/reporting/${dealsId}/records`, rows: 6 },
  ]

  beforeAll(async () => {
    server = await startTestServer()
    const loaded = await server.load(v1Fixture())
    apiKey = loaded.apiKey
    const tables = await server.store.dataTables.list(loaded.companyId)
    dealsId = tables.find((table) => table.key === 'deals' && table.environment === 'live')!.id
  })
  afterAll(() => server.close())

  // Each call a second after the previous one on the injected clock, which the per-company rate limit (80 calls
  // a second) counts on: this file makes more calls than that.
  const get = (path: string) => {
    server.clock.advance(1000)
    return server.call(path, { key: apiKey })
  }

  for (const list of LISTS) {
    describe(`${list.name}`, () => {
      it('answers every row by default (offset 0, limit 2000), with the count and no next page', async () => {
        const reply = await get(list.path())
        expect(reply.status).toBe(200)
        expect(reply.body.count).toBe(list.rows)
        expect(reply.body.data).toHaveLength(list.rows)
        expect(reply.body.next).toBeNull()
        expect(new Set(reply.body.data.map((row: { id?: unknown }) => JSON.stringify(row))).size).toBe(list.rows)
      })

      it('walks every row once, in a stable order, by following next', async () => {
        const all = (await get(list.path())).body.data
        const seen: unknown[] = []
        let url: string | null = `${server.url}${list.path()}?limit=4`
        const nexts: string[] = []
        while (url !== null && nexts.length < 10) {
          expect(url.startsWith(server.url)).toBe(true)
          const reply = await get(url.slice(server.url.length))
          expect(reply.status).toBe(200)
          expect(reply.body.count).toBe(list.rows)
          seen.push(...reply.body.data)
          url = reply.body.next
          if (url) nexts.push(url)
        }
        expect(seen).toEqual(all)
        expect(nexts).toEqual([`${server.url}${list.path()}?offset=4&limit=4`])
      })

      it('answers a middle window and points at the next one', async () => {
        const all = (await get(list.path())).body.data
        const reply = await get(`${list.path()}?offset=1&limit=2`)
        expect(reply.body).toEqual({ count: list.rows, data: all.slice(1, 3), next: `${server.url}${list.path()}?offset=3&limit=2` })
        // Leading zeros, however many, are not digits of the value.
        expect((await get(`${list.path()}?offset=${'0'.repeat(40)}1&limit=2`)).body).toEqual(reply.body)
        const last = await get(`${list.path()}?offset=${list.rows - 2}&limit=2`)
        expect(last.body).toEqual({ count: list.rows, data: all.slice(-2), next: null })
      })

      it('answers only the count for limit=0', async () => {
        const reply = await get(`${list.path()}?limit=0`)
        expect(reply.status).toBe(200)
        expect(reply.body).toEqual({ count: list.rows, data: [], next: null })
      })

      it('answers an empty page, not an error, for an offset at or far past the end', async () => {
        for (const offset of [String(list.rows), '1000000', '9007199254740993', '9223372036854775807', '0009223372036854775807']) {
          const reply = await get(`${list.path()}?offset=${offset}&limit=5`)
          expect(reply.status, offset).toBe(200)
          expect(reply.body).toEqual({ count: list.rows, data: [], next: null })
        }
      })

      it('refuses an offset that is not an integer from 0 to 9223372036854775807 with a 400 naming offset', async () => {
        for (const offset of ['-1', '1.5', 'abc', '', '1e3', '+1', '9223372036854775808', '99999999999999999999999999999999']) {
          const reply = await get(`${list.path()}?offset=${encodeURIComponent(offset)}`)
          expect(reply.status, offset).toBe(400)
          expect(reply.body, offset).toEqual(validationBody('offset'))
        }
      })

      it('refuses a limit that is not an integer from 0 to 2000 with a 400 naming limit', async () => {
        // What Number() reads but an integer is not written as: a space was a limit of 0, the count-only answer.
        for (const limit of ['2001', '-1', '1.5', 'abc', '', '10000000000', ' ', '0x10', '0b1', '1e3', '+5', '5 ', '1.0']) {
          const reply = await get(`${list.path()}?limit=${encodeURIComponent(limit)}`)
          expect(reply.status, limit).toBe(400)
          expect(reply.body, limit).toEqual(validationBody('limit'))
        }
        const twice = await get(`${list.path()}?limit=1&limit=2`)
        expect(twice.status).toBe(400)
        expect(twice.body).toEqual(validationBody('limit'))
      })

      it('accepts the bounds of both ranges', async () => {
        expect((await get(`${list.path()}?offset=0&limit=2000`)).status).toBe(200)
        expect((await get(`${list.path()}?offset=9223372036854775807&limit=0`)).body).toEqual({ count: list.rows, data: [], next: null })
      })
    })
  }

  it('writes next from PUBLIC_URL when it is set', async () => {
    const behindProxy = await startTestServer({ PUBLIC_URL: 'https://api.example.com' })
    try {
      const { apiKey: key } = await behindProxy.load(v1Fixture())
      const reply = await behindProxy.call('/v1/users?limit=5', { key })
      expect(reply.body.next).toBe('https://api.example.com/v1/users?offset=5&limit=5')
    } finally {
      await behindProxy.close()
    }
  })
})

describe('v1 lists: a walk whose data changed between two pages', () => {
  let server: TestServer
  let companies = 0
  // An id before every stored one: a row saved with it comes first in its list, moving every other row by one.
  const FIRST_ID = '000000000000000000000001'

  beforeAll(async () => {
    server = await startTestServer()
  })
  afterAll(() => server.close())

  interface Changed {
    path: (dealsId: string) => string
    prepend: (store: TestServer['store'], companyId: string, dealsId: string) => Promise<void>
  }
  const LISTS: Record<string, Changed> = {
    'GET /v1/users': {
      path: () => '/v1/users',
      prepend: (store, companyId) => store.users.save(companyId, [aUser(companyId, { id: FIRST_ID })]),
    },
    'GET /v1/tables/{data_table_key}/records': {
      path: () => '/v1/tables/deals/records',
      prepend: (store, companyId, dealsId) =>
        store.records.saveMany(companyId, [aRecord(companyId, dealsId, { id: FIRST_ID, values: { deal_id: 'D-0', deal_name: 'First' } })]),
    },
    'GET /v1/reporting': {
      path: () => '/v1/reporting',
      prepend: (store, companyId) => store.statements.insertMany([aStatement(companyId, { id: FIRST_ID })]),
    },
    'GET /v1/reporting/{data_table_id}/records': {
      path: (dealsId) => `/v1/reporting/${dealsId}/records`,
      prepend: (store, companyId, dealsId) => store.commissionLines.insertMany([aCommissionLine(companyId, dealsId, { id: FIRST_ID })]),
    },
  }

  for (const [name, list] of Object.entries(LISTS)) {
    it(`${name}: answers the page at its offset after a write, not the one after where the walk stood`, async () => {
      const { apiKey, companyId } = await server.load(v1Fixture(`Walker${++companies}`))
      const tables = await server.store.dataTables.list(companyId)
      const dealsId = tables.find((table) => table.key === 'deals' && table.environment === 'live')!.id
      const path = list.path(dealsId)
      const get = async (url: string) => {
        server.clock.advance(1000)
        const reply = await server.call(url, { key: apiKey })
        expect(reply.status).toBe(200)
        return reply.body
      }
      const before = (await get(path)).data
      const first = await get(`${path}?limit=2`)
      const second = await get(first.next.slice(server.url.length))
      expect([...first.data, ...second.data]).toEqual(before.slice(0, 4))
      expect(second.next).toBe(`${server.url}${path}?offset=4&limit=2`)

      await list.prepend(server.store, companyId, dealsId)
      const after = (await get(path)).data
      expect(after).toHaveLength(before.length + 1)
      expect((await get(second.next.slice(server.url.length))).data).toEqual(after.slice(4, 6))
    })
  }
})
