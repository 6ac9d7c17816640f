import { ObjectId } from 'bson'

/** A new ObjectId in its stored text form (src/domain/ids.ts): ids sort by creation time, in text and in MongoDB. */
export function newId(): string {
  return new ObjectId().toHexString()
}

/**
 * `candidate` when it sorts after `floor`, else the id right after `floor`: for an id that must come after one
 * another process made (ObjectIds of two processes in the same second sort by their random part, not by time).
 */
export function idAfter(candidate: string, floor: string | null): string {
  if (floor === null || candidate > floor) return candidate
  return (BigInt(`0x${floor}`) + 1n).toString(16).padStart(24, '0')
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
