/**
 * Runs async work one at a time, in call order; work that fails does not stop the work queued after it. The
 * SQLite adapter queues its writes on it (one writer per file), the MongoDB adapter its transactions and the
 * operations of one transaction's session.
 */
export class SerialQueue {
  #tail: Promise<unknown> = Promise.resolve()

  run<T>(work: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(work)
    this.#tail = result.catch(() => undefined)
    return result
  }
}
