import { describe, expect, it } from 'vitest'
import { ControlledClock, LATEST_TIME } from '../src/clock.ts'
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

  it('stops at the end of year 9999, where it may be moved, rather than run on past it', async () => {
    let stored = 0
    const offsets: ClockOffsetRepository = {
      read: async () => stored,
      advance: async (milliseconds) => (stored += milliseconds),
      raiseTo: async (offset) => (stored = Math.max(stored, offset)),
    }
    const clock = new ControlledClock(offsets)
    // Set a second before the end; a process reading the clock later would find it past the end.
    await clock.raiseTo(new Date(LATEST_TIME.getTime() - 1000))
    await clock.advance(5000)
    expect(clock.now().toISOString()).toBe('9999-12-31T23:59:59.999Z')
  })
})
