import { Readable } from 'node:stream'
import { request } from 'undici'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { upsertCallsOf } from '../src/routes/v1/import-admission.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { type ImportHarness, startImportHarness } from './imports-support.ts'

const MIB = 1024 * 1024

/** `count` deal records whose JSON is about `count` × 100 bytes. */
function deals(count: number, prefix = 'B'): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, index) => ({
    deal_id: `${prefix}-${index}`,
    deal_name: `Deal ${index} ${'x'.repeat(50)}`,
    amount: index,
    amount_currency: 'EUR',
  }))
}

/** About 0.57 MiB of records (133 bytes each): one fits a 1 MiB queue, two do not. */
const HALF_QUEUE = () => deals(4500)

let h: ImportHarness
let other: { companyId: string; apiKey: string }

beforeEach(async () => {
  h = await startImportHarness('Acme', { IMPORT_QUEUE_LIMIT_MB: '1' })
  other = await h.server.load(smallFixture('Other'))
})
afterEach(async () => {
  await h.close()
})

const postRecords = (body: unknown, key = h.key) => h.server.call('/v1/tables/deals/records/bulk', { method: 'POST', key, body })

function expectQueueFull(reply: { status: number; headers: Record<string, unknown>; body: any }): void {
  expect(reply.status).toBe(429)
  expect(Number(reply.headers['retry-after'])).toBeGreaterThanOrEqual(1)
  expect(Object.keys(reply.body).toSorted()).toStrictEqual(['message', 'type'])
  expect(reply.body.type).toBe('TooManyRequestsError')
  expect(reply.body.message).toMatch(/limit of 1\.0 MiB/)
}

describe("a company's import queue is bounded (IMPORT_QUEUE_LIMIT_MB)", () => {
  it('answers 429 with Retry-After past the bound, stores nothing of the refused call, and accepts it once the queue drained', async () => {
    const first = await postRecords(HALF_QUEUE())
    expect(first.status).toBe(200)
    const queued = await h.store.imports.queuedBytes(h.companyId)
    expect(queued).toBeGreaterThan(0.5 * MIB)

    const refused = await postRecords(deals(4500, 'R'))
    expectQueueFull(refused)
    expect(await h.store.imports.queuedBytes(h.companyId)).toBe(queued)
    expect((await h.importOf(first.body.import_id)).data_tables_details).toHaveLength(1)

    // Another company has a queue of its own.
    expect((await postRecords(HALF_QUEUE(), other.apiKey)).status).toBe(200)

    expect(await h.drain()).toBe(2)
    expect(await h.store.imports.queuedBytes(h.companyId)).toBe(0)
    const again = await postRecords(deals(4500, 'R'))
    expect(again.status).toBe(200)
    expect(await h.drain()).toBe(1)
    const table = (await h.store.dataTables.getByKey(h.companyId, 'live', 'deals'))!
    expect(await h.store.records.count(h.companyId, table.id)).toBe(2 + 4500 + 4500)

    // Counted apart from the rate limit's refusals.
    const metrics = (await h.server.call('/metrics')).text
    expect(metrics).toMatch(/^commission_api_import_queue_full_total 1$/m)
    expect(metrics).toMatch(/^commission_api_rate_limited_total 0$/m)
  })

  it('counts the wait from the end of an open debounce window, whose import cannot run before it closes', async () => {
    const postInWindow = (body: unknown) =>
      h.server.call('/v1/tables/deals/records/bulk?debounce=120', { method: 'POST', key: h.key, body })
    expect((await postInWindow(HALF_QUEUE())).status).toBe(200)
    const refused = await postInWindow(deals(4500, 'R'))
    expectQueueFull(refused)
    // 120 s of window, then at least a second to apply what is over the bound.
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(121)
    expect(refused.body.message).toMatch(/debounce window closes at .*the calls of one window must fit in the limit together/)
    h.server.clock.advance(60_000)
    const later = await postInWindow(deals(4500, 'R'))
    expectQueueFull(later)
    expect(Number(later.headers['retry-after'])).toBeGreaterThanOrEqual(61)
    expect(Number(later.headers['retry-after'])).toBeLessThan(121)
    // Once the window closed and its import ran, the call is taken.
    h.server.clock.advance(60_000)
    expect(await h.drain()).toBe(1)
    expect((await postRecords(deals(4500, 'R'))).status).toBe(200)
  })

  it("counts from the window's end however many of the company's newer imports wait, each of its own call", async () => {
    const window = await h.server.call('/v1/tables/deals/records/bulk?debounce=120', { method: 'POST', key: h.key, body: HALF_QUEUE() })
    expect(window.status).toBe(200)
    // Calls of another kind, without debounce, after it: an import each, all newer than the window's.
    for (let index = 0; index < 110; index++) {
      const user = await h.call('/v1/users/bulk', { method: 'PUT', body: { data: [{ email: `queued-${index}@acme.example` }] } })
      expect(user.status).toBe(200)
    }
    const refused = await postRecords(deals(4500, 'R'))
    expectQueueFull(refused)
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(121)
    expect(refused.body.message).toMatch(/debounce window closes at/)
  })

  it('counts every upsert endpoint of the company against one queue', async () => {
    // About 0.94 MiB.
    expect((await postRecords(deals(7400))).status).toBe(200)
    const users = await h.call('/v1/users/bulk', {
      method: 'PUT',
      body: { data: [{ email: 'new@acme.example', name: 'N'.repeat(200_000) }] },
    })
    expectQueueFull(users)
    const managers = await h.call('/v1/users/managers/bulk', {
      method: 'PUT',
      body: {
        data: Array.from({ length: 200 }, () => ({
          user: 'rep@acme.example',
          manager: 'owner@acme.example',
          start_date: '2026-01',
          note: 'y'.repeat(1000),
        })),
      },
    })
    expectQueueFull(managers)
    // A small call still fits.
    expect((await h.call('/v1/users/bulk', { method: 'PUT', body: { data: [{ email: 'small@acme.example' }] } })).status).toBe(200)
  })

  it('refuses a call at once when the queue is full, without reading its body', async () => {
    expect((await postRecords(deals(10_000))).status).toBe(200)
    // Malformed JSON would be a 400 if the body were parsed: the 429 comes first, and the connection closes after it.
    const refused = await postRecords('[{"deal_id": "X", ')
    expectQueueFull(refused)
    expect(refused.headers.connection).toBe('close')
  })

  it('counts a chunked body (no Content-Length) by its size, and checks the bound when it is stored', async () => {
    const chunked = async (records: unknown[]) => {
      const text = JSON.stringify(records)
      const response = await request(`${h.server.url}/v1/tables/deals/records/bulk`, {
        method: 'POST',
        headers: { 'x-api-key': h.key, 'content-type': 'application/json' },
        body: Readable.from(
          (function* () {
            for (let at = 0; at < text.length; at += 64 * 1024) yield text.slice(at, at + 64 * 1024)
          })(),
        ),
      })
      return { status: response.statusCode, headers: response.headers, body: await response.body.json() }
    }
    expect((await chunked(HALF_QUEUE())).status).toBe(200)
    expect(await h.store.imports.queuedBytes(h.companyId)).toBe(Buffer.byteLength(JSON.stringify(HALF_QUEUE())))
    expectQueueFull(await chunked(deals(4500, 'R')))
  })
})

/** Starts a records call whose body is sent in two parts: the second only when `finish` is called. */
function startSlowCall(key: string, records: unknown[]) {
  const text = JSON.stringify(records)
  let sendRest!: () => void
  const rest = new Promise<void>((resolve) => {
    sendRest = resolve
  })
  const controller = new AbortController()
  const answered = request(`${h.server.url}/v1/tables/deals/records/bulk`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) },
    signal: controller.signal,
    body: Readable.from(
      (async function* () {
        yield text.slice(0, 10)
        await rest
        yield text.slice(10)
      })(),
    ),
  }).then(async (response) => ({ status: response.statusCode, body: await response.body.json() }))
  return { answered, finish: sendRest, abort: () => controller.abort() }
}

/** Resolves once `calls` calls of the company hold or await its turn. */
async function waiting(companyId: string, calls: number): Promise<void> {
  while (upsertCallsOf(companyId) < calls) await new Promise((resolve) => setTimeout(resolve, 5))
}

describe('one upsert body of a company at a time', () => {
  it("reads a company's next call once its previous one is answered; other companies do not wait", async () => {
    const slow = startSlowCall(h.key, deals(3))
    await waiting(h.companyId, 1)
    let nextAnswered = false
    const next = postRecords(deals(2, 'N')).then((reply) => {
      nextAnswered = true
      return reply
    })
    await waiting(h.companyId, 2)
    expect((await postRecords(deals(2, 'O'), other.apiKey)).status).toBe(200)
    expect(nextAnswered).toBe(false)
    slow.finish()
    expect((await slow.answered).status).toBe(200)
    expect((await next).status).toBe(200)
  })

  it('refuses a call over the bound at once, without waiting for the turn', async () => {
    expect((await postRecords(HALF_QUEUE())).status).toBe(200)
    const slow = startSlowCall(h.key, deals(3))
    await waiting(h.companyId, 1)
    expectQueueFull(await postRecords(deals(4500, 'R')))
    slow.finish()
    expect((await slow.answered).status).toBe(200)
  })

  it('gives the turn on when the client of the call holding it goes away', async () => {
    const slow = startSlowCall(h.key, deals(3))
    await waiting(h.companyId, 1)
    const next = postRecords(deals(2, 'N'))
    await waiting(h.companyId, 2)
    slow.abort()
    await expect(slow.answered).rejects.toThrow(/abort/i)
    expect((await next).status).toBe(200)
    expect(await h.drain()).toBe(1)
    expect(upsertCallsOf(h.companyId)).toBe(0)
  })
})
