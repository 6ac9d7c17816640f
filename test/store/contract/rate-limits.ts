import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { newId } from '../../../src/ids.ts'
import { rateSubjectKey, type RateSubjectKey, type Store } from '../../../src/store/port.ts'
import { storePerTest, type StoreAdapter } from './support.ts'

const at = (iso: string) => new Date(iso)
const T0 = '2026-06-01T10:00:00.000Z'

/** The rate-limit counters (`store.rateLimits`), for every adapter. */
export function rateLimitContract(adapter: StoreAdapter): void {
  describe('rate limits', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))
    // Fresh subjects per test, so that a shared server's earlier counts never matter.
    let company: RateSubjectKey
    let other: RateSubjectKey
    let address: RateSubjectKey

    beforeEach(async () => {
      company = rateSubjectKey({ companyId: newId() })
      other = rateSubjectKey({ companyId: newId() })
      address = rateSubjectKey({ address: `198.51.100.${Math.floor(Math.random() * 250)}-${newId()}` })
    })

    it('opens a window with the first hit and counts the next ones in it', async () => {
      expect(await store.rateLimits.hit(company, 1000, at(T0))).toEqual({ hits: 1, resetsAt: '2026-06-01T10:00:01.000Z' })
      expect(await store.rateLimits.hit(company, 1000, at('2026-06-01T10:00:00.400Z'))).toEqual({
        hits: 2,
        resetsAt: '2026-06-01T10:00:01.000Z',
      })
      expect(await store.rateLimits.hit(company, 1000, at('2026-06-01T10:00:00.999Z'))).toEqual({
        hits: 3,
        resetsAt: '2026-06-01T10:00:01.000Z',
      })
    })

    it('opens a new window once the previous one closed', async () => {
      for (let index = 0; index < 5; index++) await store.rateLimits.hit(company, 1000, at(T0))
      expect(await store.rateLimits.hit(company, 1000, at('2026-06-01T10:00:01.000Z'))).toEqual({
        hits: 1,
        resetsAt: '2026-06-01T10:00:02.000Z',
      })
      expect(await store.rateLimits.hit(company, 1000, at('2026-06-01T10:05:00.000Z'))).toEqual({
        hits: 1,
        resetsAt: '2026-06-01T10:05:01.000Z',
      })
    })

    it('opens a new window when the clock stepped back, rather than keep one that ends over two windows ahead', async () => {
      for (let index = 0; index < 80; index++) await store.rateLimits.hit(company, 1000, at(T0))
      // An hour back: the window opened at T0 would stay open for that hour.
      expect(await store.rateLimits.hit(company, 1000, at('2026-06-01T09:00:00.000Z'))).toEqual({
        hits: 1,
        resetsAt: '2026-06-01T09:00:01.000Z',
      })
      // A window ending exactly one window ahead is the one just opened: it counts on.
      expect(await store.rateLimits.hit(company, 1000, at('2026-06-01T09:00:00.000Z'))).toEqual({
        hits: 2,
        resetsAt: '2026-06-01T09:00:01.000Z',
      })
      // So does one an instance whose clock is half a second ahead opened: it ends 1.5 windows ahead of this one.
      expect(await store.rateLimits.hit(company, 1000, at('2026-06-01T08:59:59.500Z'))).toEqual({
        hits: 3,
        resetsAt: '2026-06-01T09:00:01.000Z',
      })
    })

    it('counts several requests in one hit, in the open window or in a new one', async () => {
      expect(await store.rateLimits.hit(company, 1000, at(T0), 4)).toEqual({ hits: 4, resetsAt: '2026-06-01T10:00:01.000Z' })
      expect(await store.rateLimits.hit(company, 1000, at('2026-06-01T10:00:00.300Z'))).toEqual({
        hits: 5,
        resetsAt: '2026-06-01T10:00:01.000Z',
      })
      expect(await store.rateLimits.hit(company, 1000, at('2026-06-01T10:00:00.600Z'), 3)).toEqual({
        hits: 8,
        resetsAt: '2026-06-01T10:00:01.000Z',
      })
      expect(await store.rateLimits.hit(company, 1000, at('2026-06-01T10:00:01.200Z'), 7)).toEqual({
        hits: 7,
        resetsAt: '2026-06-01T10:00:02.200Z',
      })
    })

    it('counts every subject on its own: companies and addresses', async () => {
      for (let index = 0; index < 3; index++) await store.rateLimits.hit(company, 1000, at(T0))
      expect((await store.rateLimits.hit(other, 1000, at(T0))).hits).toBe(1)
      expect((await store.rateLimits.hit(address, 1000, at(T0))).hits).toBe(1)
      expect((await store.rateLimits.hit(company, 1000, at(T0))).hits).toBe(4)
    })

    it('peeks at the open window without counting, and sees none before the first hit or after it closed', async () => {
      expect(await store.rateLimits.peek(company, at(T0))).toBeNull()
      await store.rateLimits.hit(company, 1000, at(T0))
      await store.rateLimits.hit(company, 1000, at(T0))
      const open = { hits: 2, resetsAt: '2026-06-01T10:00:01.000Z' }
      expect(await store.rateLimits.peek(company, at('2026-06-01T10:00:00.500Z'))).toEqual(open)
      expect(await store.rateLimits.peek(company, at('2026-06-01T10:00:00.500Z'))).toEqual(open)
      expect(await store.rateLimits.peek(company, at('2026-06-01T10:00:01.000Z'))).toBeNull()
      expect(await store.rateLimits.peek(other, at(T0))).toBeNull()
    })

    it('gives each of many concurrent hits its own count', async () => {
      const windows = await Promise.all(Array.from({ length: 60 }, () => store.rateLimits.hit(company, 1000, at(T0))))
      expect(windows.map((window) => window.hits).toSorted((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, index) => index + 1))
    })
  })
}

/** The rate-limit counters seen by two stores on the same data, as two instances would see them. */
export function sharedRateLimitContract(adapter: StoreAdapter): void {
  describe('rate limits shared between stores', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))
    let twin: Store
    const company = rateSubjectKey({ companyId: newId() })

    beforeEach(async () => {
      twin = await adapter.openTwin(store)
    })

    afterEach(async () => {
      await twin.close()
    })

    it('shares the counts with another store on the same data, as another process would', async () => {
      await store.rateLimits.hit(company, 1000, at(T0))
      expect((await twin.rateLimits.hit(company, 1000, at(T0))).hits).toBe(2)
      const both = await Promise.all(
        Array.from({ length: 20 }, (_, index) => (index % 2 === 0 ? store : twin).rateLimits.hit(company, 1000, at(T0))),
      )
      expect(both.map((window) => window.hits).toSorted((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, index) => index + 3))
      expect(await twin.rateLimits.peek(company, at(T0))).toEqual({ hits: 22, resetsAt: '2026-06-01T10:00:01.000Z' })
    })
  })
}
