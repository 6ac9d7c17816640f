/** Where time comes from: injected everywhere, so tests move time (debounce windows, leases) without sleeping. */
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }

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
