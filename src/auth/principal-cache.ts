import type { Store } from '../store/port.ts'
import { hashApiKey, type KeyRefusal, lookUpKey, missingKey, type Principal, principalOf } from './api-keys.ts'

/**
 * How long an authentication is reused. A key revoked, an owner archived or a company closed by another
 * process (another instance, the CLI, the import worker's thread) is refused at the latest this long after
 * its write commits, well within the second the service promises; one changed through this process's store
 * is refused at the next request (`Store.committedWrites`).
 */
export const PRINCIPAL_FRESH_MS = 500

/** The most keys remembered at once; the oldest entry goes first. */
const MAX_ENTRIES = 10_000

interface Entry {
  outcome: Principal | KeyRefusal
  /** `performance.now()` before the store was read. */
  readAt: number
  /** `store.committedWrites()` before the store was read. */
  writes: number
}

/**
 * Remembers what each presented key authenticated as, by its hash (never the secret), so that a request
 * whose key was checked a moment ago costs no store read. A key the store does not know is not remembered:
 * a guesser's random keys would only fill the map. Principals are frozen, for requests share them.
 */
export class PrincipalCache {
  readonly #store: Store
  readonly #entries = new Map<string, Entry>()
  readonly #now: () => number

  constructor(store: Store, now: () => number = () => performance.now()) {
    this.#store = store
    this.#now = now
  }

  /** `authenticate`, answered from what was read less than PRINCIPAL_FRESH_MS ago when nothing was written since. */
  async authenticate(secret: string | undefined): Promise<Principal> {
    if (!secret) throw missingKey()
    const hash = hashApiKey(secret)
    const writes = this.#store.committedWrites()
    const entry = this.#entries.get(hash)
    if (entry && entry.writes === writes && this.#now() - entry.readAt < PRINCIPAL_FRESH_MS) return principalOf(entry.outcome)
    const readAt = this.#now()
    const outcome = await lookUpKey(this.#store, hash)
    this.#entries.delete(hash)
    if (outcome !== null) {
      if (this.#entries.size >= MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value as string)
      this.#entries.set(hash, { outcome: deepFreeze(outcome), readAt, writes })
    }
    return principalOf(outcome)
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const inner of Object.values(value)) deepFreeze(inner)
  }
  return value
}
