/**
 * Slots per key, with a bounded first-come-first-served queue per key for those who find them all taken: what
 * shares the event loop between companies (`src/routes/fair-reads.ts`, the decision in docs/decisions.md). It knows
 * nothing of HTTP.
 *
 * A slot given back does not pass on at once: it passes at the event loop's next turn (`handOver`, setImmediate
 * by default), to the next in its key's queue, or is freed then. So a key's holders that give back a slot and take it
 * again in one turn (its requests that arrived together) never keep it from the others' work that arrived meanwhile:
 * that is served first, by the poll phase of the next turn, before the handover in its check phase.
 */
export class SlotQueues {
  readonly #slots: number
  readonly #maxWaiting: number
  readonly #handOver: (pass: () => void) => void
  readonly #keys = new Map<string, KeyQueue>()

  /**
   * `slots`: holders of a key at once; `maxWaiting`: tickets of a key waiting at most; `handOver`: runs the passing
   * of a slot given back (a test's own, to pass it when it chooses).
   */
  constructor(slots: number, maxWaiting: number, handOver: (pass: () => void) => void = setImmediate) {
    this.#slots = slots
    this.#maxWaiting = maxWaiting
    this.#handOver = handOver
  }

  /**
   * A ticket for a slot of `key`: held at once when one is free (`state`), else waiting in the key's queue, and then
   * `onHeld` is called when it gets its slot (never after its release). Null when `maxWaiting` tickets of the key
   * wait already: nothing was taken.
   */
  take(key: string, onHeld: () => void): SlotTicket | null {
    let queue = this.#keys.get(key)
    if (!queue) {
      queue = { holders: 0, waiting: [] }
      this.#keys.set(key, queue)
    }
    if (queue.holders < this.#slots) {
      queue.holders++
      return new Ticket('held', onHeld, this.#releaser(key, queue))
    }
    if (queue.waiting.length >= this.#maxWaiting) return null
    const ticket = new Ticket('waiting', onHeld, this.#releaser(key, queue))
    queue.waiting.push(ticket)
    return ticket
  }

  /** The tickets of `key` holding a slot (a slot given back counts until it is passed on) and waiting. */
  of(key: string): { holding: number; waiting: number } {
    const queue = this.#keys.get(key)
    return { holding: queue?.holders ?? 0, waiting: queue?.waiting.length ?? 0 }
  }

  /** How many keys hold or wait for a slot: a key with neither is forgotten. */
  get keys(): number {
    return this.#keys.size
  }

  /** What a ticket of `key` does when released: gives its slot back, or leaves the queue. */
  #releaser(key: string, queue: KeyQueue): (ticket: Ticket, held: boolean) => void {
    return (ticket, held) => {
      if (held) return this.#giveBack(key, queue)
      queue.waiting.splice(queue.waiting.indexOf(ticket), 1)
      this.#forgetIdle(key, queue)
    }
  }

  #giveBack(key: string, queue: KeyQueue): void {
    this.#handOver(() => {
      queue.holders--
      while (queue.holders < this.#slots && queue.waiting.length > 0) {
        queue.holders++
        ;(queue.waiting.shift() as Ticket).hold()
      }
      this.#forgetIdle(key, queue)
    })
  }

  #forgetIdle(key: string, queue: KeyQueue): void {
    if (queue.holders === 0 && queue.waiting.length === 0 && this.#keys.get(key) === queue) this.#keys.delete(key)
  }
}

export interface SlotTicket {
  /** Whether the ticket holds its slot now, waits for one, or is done (`release`). */
  readonly state: 'held' | 'waiting' | 'released'
  /** Gives the slot back, or leaves the queue without one. Idempotent. */
  release(): void
}

interface KeyQueue {
  holders: number
  /** First come first. */
  waiting: Ticket[]
}

/**
 * A class, its `state` a getter of its prototype: an object literal with a getter closing over each ticket's state
 * made a hidden class per ticket, in the old generation, and tripled the time of every scavenge of the server
 * (docs/performance.md, "Fair reads per company").
 */
class Ticket implements SlotTicket {
  #state: 'held' | 'waiting' | 'released'
  readonly #onHeld: () => void
  readonly #release: (ticket: Ticket, held: boolean) => void

  constructor(state: 'held' | 'waiting', onHeld: () => void, release: (ticket: Ticket, held: boolean) => void) {
    this.#state = state
    this.#onHeld = onHeld
    this.#release = release
  }

  get state(): 'held' | 'waiting' | 'released' {
    return this.#state
  }

  hold(): void {
    this.#state = 'held'
    this.#onHeld()
  }

  release(): void {
    if (this.#state !== 'released') this.#release(this, this.#state === 'held')
    this.#state = 'released'
  }
}
