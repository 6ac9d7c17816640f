import type { ClockMode } from './config.ts'
import type { ClockOffsetRepository } from './store/clock-offset.ts'

/** Where time comes from: injected everywhere, so tests move time (debounce windows, leases) without sleeping. */
export interface Clock {
  now(): Date
  /**
   * Reads again what this clock's time depends on outside the process (the controlled clock's offset, in the
   * store); absent on a clock that depends on nothing else. Called where the latest time of every process
   * matters: before each request is handled, before each claim of an import, and in a transaction that stamps
   * what it writes, which passes its own repository (`offsets`): a read outside it may wait for it to end.
   */
  sync?(offsets?: ClockOffsetRepository): Promise<void>
}

export const systemClock: Clock = { now: () => new Date() }

/** The last instant a date of the interface writes (four-digit years). */
export const LAST_WRITABLE_TIME = new Date(Date.UTC(9999, 11, 31, 23, 59, 59, 999))

export const DAY_MS = 24 * 60 * 60 * 1000

/**
 * Where a controlled clock stops rather than run on into year 10000, whose dates (`+010000-…`) every reader would
 * refuse and every comparison of text would put before the others: two days before the last instant, so that what
 * is written ahead of now (an import's lease, up to an hour; a debounce window's end, up to a day) stays a date of
 * four digits, and so later than now. Moves stop a day short of it (src/admin/clock.ts), so only a day of running
 * gets it there; a store left past it by an earlier version tells it too. Once there, time stands still:
 * rate-limit windows, leases and debounce windows opened then no longer end.
 */
export const CLOCK_STOP_TIME = new Date(LAST_WRITABLE_TIME.getTime() - 2 * DAY_MS)

/** A clock that only moves when told to, for tests. */
export class ManualClock implements Clock {
  #now: number

  constructor(start: Date | string = '2026-01-01T00:00:00.000Z') {
    this.#now = new Date(start).getTime()
  }

  now(): Date {
    return new Date(this.#now)
  }

  advance(milliseconds: number): void {
    this.#now += milliseconds
  }

  set(time: Date | string): void {
    this.#now = new Date(time).getTime()
  }
}

/**
 * `CLOCK=controlled`: the system's time plus an offset kept in the store, which only grows, and only when told
 * (`POST /admin/clock`, the CLI's `clock`). Between two moves it runs at the system clock's pace. Every process
 * sharing the store reads the same offset (`sync`), so API instances, workers and the CLI tell the same time;
 * this process keeps the last offset it read, and never goes back to an older one.
 */
export class ControlledClock implements Clock {
  readonly #offsets: ClockOffsetRepository
  #offsetMs = 0

  constructor(offsets: ClockOffsetRepository) {
    this.#offsets = offsets
  }

  now(): Date {
    return new Date(Math.min(Date.now() + this.#offsetMs, CLOCK_STOP_TIME.getTime()))
  }

  async sync(offsets: ClockOffsetRepository = this.#offsets): Promise<void> {
    this.#accept(await offsets.read())
  }

  /** Moves the time of every process sharing the store `milliseconds` ahead; returns the new time. */
  async advance(milliseconds: number): Promise<Date> {
    this.#accept(await this.#offsets.advance(milliseconds))
    return this.now()
  }

  /** Moves the time of every process sharing the store to `instant`, unless it is there already or past it. */
  async raiseTo(instant: Date): Promise<Date> {
    this.#accept(await this.#offsets.raiseTo(instant.getTime() - Date.now()))
    return this.now()
  }

  #accept(offsetMs: number): void {
    this.#offsetMs = Math.max(this.#offsetMs, offsetMs)
  }
}

/** The clock `CLOCK` names: the system's, or the controlled clock of the store, read once before it is used. */
export async function clockFor(mode: ClockMode, offsets: ClockOffsetRepository): Promise<Clock> {
  if (mode === 'system') return systemClock
  const clock = new ControlledClock(offsets)
  await clock.sync()
  return clock
}
