import { ObjectId } from 'bson'

/** A new ObjectId in its stored text form (src/domain/ids.ts): ids sort by creation time, in text and in MongoDB. */
export function newId(): string {
  return new ObjectId().toHexString()
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
