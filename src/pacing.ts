import { setImmediate } from 'node:timers/promises'

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
