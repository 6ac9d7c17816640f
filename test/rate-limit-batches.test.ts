import * as fc from 'fast-check'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DatabaseSync } from 'node:sqlite'
import { join } from 'node:path'
import { ALONE_AFTER_BUSY_MS, batchSize, BatchedRateCounts } from '../src/rate-limit/batched-counts.ts'
import { type Store, StoreBusyError } from '../src/store/port.ts'
import { SqliteRateLimits } from '../src/store/sqlite/rate-limits.ts'
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import { tempDataDir } from './helpers/process.ts'

const KEY = 'company:0123456789abcdef01234567'
const T0 = Date.parse('2026-06-01T10:00:00.000Z')

/** N instances of the counter sharing one store, as N processes sharing a database would. */
function instances(store: Store, count: number): BatchedRateCounts[] {
  return Array.from(
    { length: count },
    () => new BatchedRateCounts((key, windowMs, now, hits) => store.rateLimits.hit(key, windowMs, now, hits)),
  )
}

describe('rate limit: requests counted in batches', () => {
  let store: Store

  beforeEach(() => {
    store = openSqliteStore(':memory:')
  })
  afterEach(async () => {
    await store.close()
  })

  it('writes one request in twenty of the limit: 4 for 80, and every request for a limit under 40', () => {
    expect(batchSize(80)).toBe(4)
    expect(batchSize(1_000_000)).toBe(50_000)
    expect(batchSize(39)).toBe(1)
    expect(batchSize(1)).toBe(1)
  })

  it('is exact with one instance: 80 of 100 requests pass, each told its count, and the 81st is refused', async () => {
    const [counter] = instances(store, 1)
    const results = []
    for (let index = 0; index < 100; index++) results.push(await counter.count(KEY, 1000, 80, new Date(T0 + index)))
    expect(results.slice(0, 80).map((result) => result.current)).toEqual(Array.from({ length: 80 }, (_, index) => index + 1))
    expect(results.slice(80).every((result) => result.current > 80)).toBe(true)
    expect(results[0].ttl).toBe(1000)
    expect(results[79].ttl).toBe(921)
  })

  it('is exact with one instance under concurrency: of 90 counted at once, 80 pass', async () => {
    const [counter] = instances(store, 1)
    const results = await Promise.all(Array.from({ length: 90 }, () => counter.count(KEY, 1000, 80, new Date(T0))))
    expect(results.filter((result) => result.current <= 80)).toHaveLength(80)
  })

  it('writes far fewer times than it counts', async () => {
    let writes = 0
    const counter = new BatchedRateCounts((key, windowMs, now, hits) => {
      writes++
      return store.rateLimits.hit(key, windowMs, now, hits)
    })
    for (let index = 0; index < 80; index++) await counter.count(KEY, 1000, 80, new Date(T0))
    // The window's first request, then one write every 4.
    expect(writes).toBe(1 + Math.floor(79 / 4))
  })

  it('opens a new window once the known one closed, dropping what it had not written', async () => {
    const [counter] = instances(store, 1)
    for (let index = 0; index < 80; index++) await counter.count(KEY, 1000, 80, new Date(T0))
    expect((await counter.count(KEY, 1000, 80, new Date(T0 + 999))).current).toBe(81)
    const next = await counter.count(KEY, 1000, 80, new Date(T0 + 1000))
    expect(next).toEqual({ current: 1, ttl: 1000 })
    expect(await store.rateLimits.peek(KEY, new Date(T0 + 1000))).toEqual({ hits: 1, resetsAt: new Date(T0 + 2000).toISOString() })
  })

  it('opens a new window when the clock stepped back, rather than keep the full one open for the length of the step', async () => {
    const [counter] = instances(store, 1)
    for (let index = 0; index < 80; index++) await counter.count(KEY, 1000, 80, new Date(T0))
    expect((await counter.count(KEY, 1000, 80, new Date(T0 + 999))).current).toBe(81)
    // The system clock is stepped back an hour (NTP, a resumed machine), then 5 s pass.
    const back = T0 - 3_600_000 + 5000
    expect(await counter.count(KEY, 1000, 80, new Date(back))).toEqual({ current: 1, ttl: 1000 })
    expect(await store.rateLimits.peek(KEY, new Date(back))).toEqual({ hits: 1, resetsAt: new Date(back + 1000).toISOString() })
  })

  it('counts on, in batches, in a window another instance opened with its clock a little ahead', async () => {
    const [ahead] = instances(store, 1)
    expect((await ahead.count(KEY, 1000, 80, new Date(T0 + 500))).current).toBe(1)
    let writes = 0
    const behind = new BatchedRateCounts((key, windowMs, now, hits) => {
      writes++
      return store.rateLimits.hit(key, windowMs, now, hits)
    })
    // This instance's clock is half a second behind: the window ends 1.5 windows ahead of it.
    const counted = []
    for (let index = 0; index < 8; index++) counted.push((await behind.count(KEY, 1000, 80, new Date(T0))).current)
    expect(counted).toEqual([2, 3, 4, 5, 6, 7, 8, 9])
    // Its first request, then one write every 4, as in a window of its own.
    expect(writes).toBe(1 + Math.floor(7 / 4))
  })

  it('across N instances, never refuses below the limit and lets through at most (N - 1) x batch over it', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 4 }),
        // Limits of batches of 2 to 6 (and of 1, exact), and more requests than the limit.
        fc.integer({ min: 20, max: 120 }),
        // Which instance each request reaches, and whether it is sent with the next ones at once.
        fc.array(fc.tuple(fc.nat(), fc.boolean()), { minLength: 130, maxLength: 300 }),
        async (count, max, requests) => {
          const shared = openSqliteStore(':memory:')
          try {
            const counters = instances(shared, count)
            let admitted = 0
            let refusedBelowLimit = false
            let group: Promise<void>[] = []
            for (const [target, together] of requests) {
              const counter = counters[target % count]
              const admittedBefore = admitted
              group.push(
                counter.count(KEY, 1000, max, new Date(T0)).then((result) => {
                  if (result.current <= max) admitted++
                  // A refusal is right only when the window really holds `max` requests (counted when sent, or since).
                  else if (Math.max(admittedBefore, admitted) < max) refusedBelowLimit = true
                }),
              )
              if (!together) {
                await Promise.all(group)
                group = []
              }
            }
            await Promise.all(group)
            expect(refusedBelowLimit).toBe(false)
            expect(admitted).toBeLessThanOrEqual(max + (count - 1) * batchSize(max))
            expect(admitted).toBeGreaterThanOrEqual(Math.min(max, requests.length))
          } finally {
            await shared.close()
          }
        },
      ),
      { numRuns: 150 },
    )
  })
})

describe('rate limit: a counter store that stays busy', () => {
  it('counts alone for a while, refusing past the limit as one instance would, and writes again after it', async () => {
    const store = openSqliteStore(':memory:')
    let busy = true
    const writes: number[] = []
    const counter = new BatchedRateCounts((key, windowMs, now, hits) => {
      writes.push(hits)
      if (busy) return Promise.reject(new StoreBusyError('the counters are locked'))
      return store.rateLimits.hit(key, windowMs, now, hits)
    })
    const results = []
    for (let index = 0; index < 100; index++) results.push(await counter.count(KEY, 1000, 80, new Date(T0 + index)))
    expect(results.slice(0, 80).map((result) => result.current)).toEqual(Array.from({ length: 80 }, (_, index) => index + 1))
    expect(results.slice(80).every((result) => result.current > 80)).toBe(true)
    // One write refused, then none while the instance counts alone.
    expect(writes).toEqual([1])

    busy = false
    await counter.count(KEY, 1000, 80, new Date(T0 + ALONE_AFTER_BUSY_MS + 1))
    expect(writes).toEqual([1, 1])
    expect((await store.rateLimits.peek(KEY, new Date(T0 + ALONE_AFTER_BUSY_MS + 1)))?.hits).toBe(1)
    await store.close()
  })

  it('carries the requests of a refused batch into the next write', async () => {
    const store = openSqliteStore(':memory:')
    let refuse = 0
    const counter = new BatchedRateCounts((key, windowMs, now, hits) =>
      refuse-- > 0 ? Promise.reject(new StoreBusyError('the counters are locked')) : store.rateLimits.hit(key, windowMs, now, hits),
    )
    await counter.count(KEY, 60_000, 80, new Date(T0))
    refuse = 1
    // Requests 2 to 5: the fifth writes the batch of 4, refused; they stay counted here.
    for (let index = 1; index <= 4; index++) await counter.count(KEY, 60_000, 80, new Date(T0 + index))
    expect((await store.rateLimits.peek(KEY, new Date(T0 + 5)))?.hits).toBe(1)
    // After the pause, the next request writes them with itself: 1 + 4 + 1.
    const after = T0 + 4 + ALONE_AFTER_BUSY_MS
    expect((await counter.count(KEY, 60_000, 80, new Date(after))).current).toBe(6)
    expect((await store.rateLimits.peek(KEY, new Date(after)))?.hits).toBe(6)
    await store.close()
  })

  it('writes nothing counted alone into the store once it may write again: the next request joins the store window', async () => {
    const store = openSqliteStore(':memory:')
    let busy = true
    const counter = new BatchedRateCounts((key, windowMs, now, hits) =>
      busy ? Promise.reject(new StoreBusyError('the counters are locked')) : store.rateLimits.hit(key, windowMs, now, hits),
    )
    // A minute's window, counted alone for its first 12 requests.
    for (let index = 0; index < 12; index++) await counter.count(KEY, 60_000, 80, new Date(T0 + index))
    busy = false
    const after = new Date(T0 + ALONE_AFTER_BUSY_MS + 500)
    expect((await counter.count(KEY, 60_000, 80, after)).current).toBe(1)
    expect((await store.rateLimits.peek(KEY, after))?.hits).toBe(1)
    await store.close()
  })

  it("SQLite: a count waits for the counters' lock on a timer, not holding the event loop, and fails as busy past the wait", async () => {
    const file = join(tempDataDir(), 'counters.sqlite')
    const counters = new SqliteRateLimits(file)
    await counters.hit(KEY, 1000, new Date(T0))
    const holder = new DatabaseSync(file)
    holder.exec('BEGIN IMMEDIATE')
    holder.exec('DELETE FROM rate_windows WHERE 0')
    let ticks = 0
    const ticking = setInterval(() => ticks++, 5)
    await expect(counters.hit(KEY, 1000, new Date(T0 + 1))).rejects.toBeInstanceOf(StoreBusyError)
    clearInterval(ticking)
    // The timer ran while the count waited: the wait was not a sleep of the thread inside SQLite.
    expect(ticks).toBeGreaterThan(3)
    holder.exec('ROLLBACK')
    expect((await counters.hit(KEY, 1000, new Date(T0 + 2))).hits).toBe(2)
    holder.close()
    counters.close()
  })
})
