import { Writable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { request } from 'undici'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { buildApp } from '../src/app.ts'
import { ManualClock } from '../src/clock.ts'
import { loadConfig } from '../src/config.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import { READS_WAITING_PER_COMPANY, readsOf } from '../src/routes/fair-reads.ts'
import type { Store } from '../src/store/port.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { call, type CallOptions, type Reply } from './helpers/server.ts'
import { openTestStore } from './helpers/test-store.ts'

const ADMIN_TOKEN = 'fair-reads-test-admin-token-0123456789'

/**
 * `store`, whose counts of a held company's table records (what `GET /v1/tables/{key}/records` reads, and nothing
 * else of these tests) wait at the store, each until the test passes it: how a test holds a company's read as long
 * as it likes, on either store.
 */
function holdingReads(store: Store) {
  const held = new Set<string>()
  const atStore: Array<() => void> = []
  const reads = new Map<string, number>()
  let mostAtOnce = 0
  const holding: Store = {
    ...store,
    records: {
      ...store.records,
      async count(companyId, tableId) {
        reads.set(companyId, (reads.get(companyId) ?? 0) + 1)
        if (held.has(companyId)) {
          const passed = new Promise<void>((resolve) => atStore.push(resolve))
          mostAtOnce = Math.max(mostAtOnce, atStore.length)
          await passed
        }
        return store.records.count(companyId, tableId)
      },
    },
  }
  return {
    store: holding,
    hold: (companyId: string) => held.add(companyId),
    /** Lets the company's reads through: those at the store now, and those to come. */
    free(companyId: string) {
      held.delete(companyId)
      for (const pass of atStore.splice(0)) pass()
    },
    /** Lets the read that came to the store first through. */
    passOne: () => atStore.shift()?.(),
    atStore: () => atStore.length,
    readsOf: (companyId: string) => reads.get(companyId) ?? 0,
    mostAtOnce: () => mostAtOnce,
  }
}

let app: FastifyInstance
let url: string
let holds: ReturnType<typeof holdingReads>
let logs: string
let dispose: () => Promise<void>
let a: { companyId: string; apiKey: string }
let b: { companyId: string; apiKey: string }

/** Starts the app on a port of its own, over a store that holds reads when told; `readsBlockThread` as the store says unless given. */
async function start(readsBlockThread?: boolean) {
  const opened = await openTestStore()
  dispose = () => opened.store.close()
  holds = holdingReads(opened.store)
  const store = readsBlockThread === undefined ? holds.store : { ...holds.store, readsBlockThread }
  const clock = new ManualClock('2026-06-01T00:00:00.000Z')
  logs = ''
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      logs += chunk.toString()
      done()
    },
  })
  const config = { ...loadConfig({ LOG_LEVEL: 'info', DEMO: 'off', ADMIN_TOKEN }), rateLimitPerSecond: 1000 }
  app = await buildApp({ config, store, clock, logStream })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  const load = async (name: string) => {
    const loaded = await loadFixture(opened.store, clock, smallFixture(name))
    return { companyId: loaded.company_id, apiKey: loaded.api_keys[0] }
  }
  a = await load('Acme')
  b = await load('Bolt')
}

beforeEach(() => start())

afterEach(async () => {
  await app.close()
  await dispose()
})

const get = (path: string, key: string, options: CallOptions = {}): Promise<Reply> => call(url + path, { key, ...options })
const RECORDS = '/v1/tables/deals/records'
const readRecords = (key: string, requestId?: string) => get(RECORDS, key, requestId ? { headers: { 'x-request-id': requestId } } : {})

async function headOfRecords(key: string, requestId: string): Promise<Pick<Reply, 'status'>> {
  const response = await request(url + RECORDS, { method: 'HEAD', headers: { 'x-api-key': key, 'x-request-id': requestId } })
  await response.body.dump()
  return { status: response.statusCode }
}

/** Resolves once `condition` holds: what the server does between two requests of a test is not seen otherwise. */
const until = (condition: () => boolean) => vi.waitFor(() => expect(condition()).toBe(true), { timeout: 10_000, interval: 2 })

/** The request ids of the answered reads of the table's records, in the order the server answered them. */
function answeredInOrder(): string[] {
  return logs
    .split('\n')
    .filter((line) => line.includes('"msg":"request"'))
    .map((line) => JSON.parse(line) as { request_id: string; req: { url: string } })
    .filter((line) => line.req.url === RECORDS)
    .map((line) => line.request_id)
}

describe('fair reads per company', () => {
  it("answers a company's waiting reads one at a time, in the order they came, every one of them", async () => {
    holds.hold(a.companyId)
    const first = readRecords(a.apiKey, 'a-0')
    await until(() => holds.atStore() === 1)
    const next: Array<Promise<Pick<Reply, 'status'>>> = []
    for (const index of [1, 2, 3, 4]) {
      // A HEAD request is a read too.
      next.push(index === 2 ? headOfRecords(a.apiKey, `a-${index}`) : readRecords(a.apiKey, `a-${index}`))
      await until(() => readsOf(a.companyId).waiting === index)
    }
    expect(readsOf(a.companyId)).toEqual({ holding: 1, waiting: 4 })
    for (let passed = 0; passed < 5; passed++) {
      await until(() => holds.atStore() === 1)
      holds.passOne()
    }
    const replies = await Promise.all([first, ...next])
    expect(replies.map((reply) => reply.status)).toEqual([200, 200, 200, 200, 200])
    expect(answeredInOrder()).toEqual(['a-0', 'a-1', 'a-2', 'a-3', 'a-4'])
    expect(holds.mostAtOnce()).toBe(1)
    await until(() => readsOf(a.companyId).holding === 0)
    expect(readsOf(a.companyId)).toEqual({ holding: 0, waiting: 0 })
  })

  it("answers another company's reads while a company's read is held, its other reads waiting", async () => {
    holds.hold(a.companyId)
    const held = readRecords(a.apiKey)
    await until(() => holds.atStore() === 1)
    const waiting = readRecords(a.apiKey)
    await until(() => readsOf(a.companyId).waiting === 1)
    const other = await readRecords(b.apiKey)
    expect(other.status).toBe(200)
    expect(other.body.count).toBe(2)
    expect(readsOf(a.companyId)).toEqual({ holding: 1, waiting: 1 })
    holds.free(a.companyId)
    expect((await held).status).toBe(200)
    expect((await waiting).status).toBe(200)
  })

  it(`refuses a read with a 429 when ${READS_WAITING_PER_COMPANY} of its company's reads wait already`, async () => {
    holds.hold(a.companyId)
    const held = readRecords(a.apiKey)
    await until(() => holds.atStore() === 1)
    const waiting = Array.from({ length: READS_WAITING_PER_COMPANY }, () => readRecords(a.apiKey))
    await until(() => readsOf(a.companyId).waiting === READS_WAITING_PER_COMPANY)
    const refused = await get('/v1/users', a.apiKey)
    expect(refused.status).toBe(429)
    expect(refused.body).toEqual({ message: expect.stringMatching(/too many .*requests are waiting/i), type: 'TooManyRequestsError' })
    expect(refused.headers['retry-after']).toBe('1')
    expect(refused.headers['ratelimit-limit']).toBe('1000')
    // Not the rate limit's 429: the metrics tell them apart.
    const metrics = (await call(`${url}/metrics`)).text
    expect(metrics).toMatch(/^commission_api_read_queue_full_total 1$/m)
    expect(metrics).toMatch(/^commission_api_rate_limited_total 0$/m)
    // Another company is not refused, nor held.
    expect((await get('/v1/users', b.apiKey)).status).toBe(200)
    holds.free(a.companyId)
    const replies = await Promise.all([held, ...waiting])
    expect(replies.every((reply) => reply.status === 200)).toBe(true)
    await until(() => readsOf(a.companyId).holding === 0)
    expect((await get('/v1/users', a.apiKey)).status).toBe(200)
  })

  it('lets a read whose client left while it waited take no turn: the next read of its company is answered', async () => {
    holds.hold(a.companyId)
    const held = readRecords(a.apiKey)
    await until(() => holds.atStore() === 1)
    const controller = new AbortController()
    const leaving = request(url + RECORDS, {
      headers: { 'x-api-key': a.apiKey, 'x-request-id': 'left-while-waiting' },
      signal: controller.signal,
    })
    await until(() => readsOf(a.companyId).waiting === 1)
    controller.abort()
    await expect(leaving).rejects.toThrow(/abort/i)
    await until(() => readsOf(a.companyId).waiting === 0)
    holds.passOne()
    expect((await held).status).toBe(200)
    holds.free(a.companyId)
    expect((await readRecords(a.apiKey)).status).toBe(200)
    // The read that left never reached the store; the journal keeps it, unanswered.
    expect(holds.readsOf(a.companyId)).toBe(2)
    await until(() => readsOf(a.companyId).holding === 0)
    const journal = await call(`${url}/admin/companies/${a.companyId}/requests`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    expect(journal.body.data).toContainEqual(expect.objectContaining({ request_id: 'left-while-waiting', status: null }))
  })

  it("does not hold a company's writes behind its reads", async () => {
    holds.hold(a.companyId)
    const held = readRecords(a.apiKey)
    await until(() => holds.atStore() === 1)
    const waiting = readRecords(a.apiKey)
    await until(() => readsOf(a.companyId).waiting === 1)
    const records = await get('/v1/tables/deals/records/bulk', a.apiKey, {
      method: 'POST',
      body: [{ deal_id: 'D-9', deal_name: 'Ninth deal', amount: 10, amount_currency: 'EUR' }],
    })
    expect(records.status).toBe(200)
    expect(records.body.objects_imported).toBe(1)
    const users = await get('/v1/users/bulk', a.apiKey, { method: 'PUT', body: { data: [{ email: 'new@acme.example', name: 'New' }] } })
    expect(users.status).toBe(200)
    expect(readsOf(a.companyId)).toEqual({ holding: 1, waiting: 1 })
    holds.free(a.companyId)
    expect((await held).status).toBe(200)
    expect((await waiting).status).toBe(200)
  })

  it('handles four reads of a company at once on a store whose reads do not hold the thread', async () => {
    await app.close()
    await dispose()
    await start(false)
    holds.hold(a.companyId)
    const replies = Array.from({ length: 5 }, () => readRecords(a.apiKey))
    await until(() => holds.atStore() === 4 && readsOf(a.companyId).waiting === 1)
    holds.free(a.companyId)
    expect((await Promise.all(replies)).every((reply) => reply.status === 200)).toBe(true)
    expect(holds.mostAtOnce()).toBe(4)
  })
})
