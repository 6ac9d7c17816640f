import { randomInt } from 'node:crypto'
import { ObjectId } from 'bson'

/** A new ObjectId in its stored text form (src/domain/ids.ts): ids sort by creation time, in text and in MongoDB. */
export function newId(): string {
  return new ObjectId().toHexString()
}

/**
 * `candidate` when it sorts after `floor`, else an id after `floor`: for an id that must come after one another
 * process made (ObjectIds of two processes in the same second sort by their random part, not by time). Not
 * `floor` + 1, which is the next id `floor`'s process makes itself: an ObjectId is a time (4 bytes), a value drawn
 * once per process (5 bytes) and a counter (3 bytes), so the id made here takes `floor`'s drawn value moved ahead
 * by a random step, which no process's counter reaches.
 */
export function idAfter(candidate: string, floor: string | null): string {
  if (floor === null || candidate > floor) return candidate
  const step = BigInt(1 + randomInt(0xffff)) << 24n
  return (BigInt(`0x${floor}`) + step).toString(16).padStart(24, '0')
}

/**
 * New ids of one sequence (a company's users, a table's records), each after the one before and after `floor`, the
 * sequence's greatest id: so that rows come in creation order even when two processes or threads make them in the
 * same second, where ObjectIds would sort by the random part of the process that made each.
 */
export class AscendingIds {
  #last: string | null

  constructor(floor: string | null) {
    this.#last = floor
  }

  readonly next = (): string => (this.#last = idAfter(newId(), this.#last))
}

/** Makes new ids and remembers them, in order: what a fixture's load made, so that a reload makes the same. */
export class IdRecorder {
  readonly ids: string[] = []

  readonly next = (): string => {
    const id = newId()
    this.ids.push(id)
    return id
  }
}

/**
 * Gives the ids `ids` holds from `from` on, one per call, then new ones (a reload by a later version of the
 * service that makes more ids than the load did); `used` says how many it gave.
 */
export class IdReplay {
  readonly #ids: readonly string[]
  #position: number

  constructor(ids: readonly string[], from = 0) {
    this.#ids = ids
    this.#position = from
  }

  get used(): number {
    return this.#position
  }

  readonly next = (): string => this.#ids[this.#position++] ?? newId()
}
