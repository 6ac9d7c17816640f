import { setImmediate } from 'node:timers/promises'

/**
 * How long long work runs before it gives the event loop a turn. It may run on the thread that serves HTTP (an admin
 * edit, a company's reset, an import run inline), where a large company's work takes seconds: every request of every
 * company would wait that long.
 */
export const PACING_MS = 10

/**
 * Lets long work share its thread with the requests it serves: `pause` gives the event loop a turn once the work
 * has run for `budgetMs` since its last turn, so that a request that arrives meanwhile waits about that long rather
 * than until the work is done. Cheap to call often: it reads the clock and returns.
 */
export class Pacer {
  readonly #budgetMs: number
  #since = performance.now()

  constructor(budgetMs: number) {
    this.#budgetMs = budgetMs
  }

  async pause(): Promise<void> {
    if (performance.now() - this.#since < this.#budgetMs) return
    await setImmediate()
    this.#since = performance.now()
  }
}

/** Writes rows `size` at a time, the pacer pausing between slices: a large company's work writes hundreds of thousands. */
export async function inSlices<T>(pacer: Pacer, rows: readonly T[], size: number, write: (slice: T[]) => Promise<void>): Promise<void> {
  for (let start = 0; start < rows.length; start += size) {
    if (start > 0) await pacer.pause()
    await write(rows.slice(start, start + size))
  }
}
