import { describe, expect, it } from 'vitest'
import { CLOCK_STOP_TIME, ControlledClock, LAST_WRITABLE_TIME } from '../src/clock.ts'
import { MAX_IMPORT_LEASE_MS } from '../src/config.ts'
import { MAX_DEBOUNCE_SECONDS } from '../src/imports/limits.ts'
import type { ClockOffsetRepository } from '../src/store/clock-offset.ts'

describe('the controlled clock of a process', () => {
  it('keeps the latest offset it learnt: a read that began before a move and answers after it moves nothing back', async () => {
    let stored = 0
    const read = Promise.withResolvers<number>()
    const offsets: ClockOffsetRepository = {
      read: () => read.promise,
      advance: async (milliseconds) => (stored += milliseconds),
      raiseTo: async (offset) => (stored = Math.max(stored, offset)),
    }
    const clock = new ControlledClock(offsets)
    const syncing = clock.sync()
    const start = Date.now()
    await clock.advance(60_000)
    // The read saw the offset as it was before the move.
    read.resolve(0)
    await syncing
    expect(clock.now().getTime()).toBeGreaterThanOrEqual(start + 60_000)
  })

  it('stops two days before the last instant four-digit years write, rather than run on into year 10000', async () => {
    let stored = 0
    const offsets: ClockOffsetRepository = {
      read: async () => stored,
      advance: async (milliseconds) => (stored += milliseconds),
      raiseTo: async (offset) => (stored = Math.max(stored, offset)),
    }
    const clock = new ControlledClock(offsets)
    // Past it: as a store an earlier version moved to the end of the year 9999, read a while later.
    await clock.raiseTo(new Date(LAST_WRITABLE_TIME.getTime() - 1000))
    await clock.advance(5000)
    expect(clock.now().toISOString()).toBe('9999-12-29T23:59:59.999Z')
    // What is written ahead of a stopped clock, the longest lease or debounce window, is still a date of four digits.
    expect(CLOCK_STOP_TIME.getTime() + MAX_IMPORT_LEASE_MS + MAX_DEBOUNCE_SECONDS * 1000).toBeLessThanOrEqual(LAST_WRITABLE_TIME.getTime())
  })
})
