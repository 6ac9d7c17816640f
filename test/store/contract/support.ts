import { afterEach, beforeEach, expect } from 'vitest'
import { type Store, StoreConflictError } from '../../../src/store/port.ts'

/** How the contract gets the stores of one adapter. */
export interface StoreAdapter {
  /** A store to test. It may share its data with other tests' stores (one server): every test works in companies it creates. */
  create(): Promise<Store>
  /**
   * A store whose data no other test's store sees, for the suites that read across companies (the worker's claim,
   * the import statistics) or hold one value for the whole store (the clock's offset). By default `create`.
   */
  createIsolated?(): Promise<Store>
  /**
   * A second store on the same data as `store`, as another process or instance opens it; `store` itself where
   * the data lives in that one store only (an in-memory database).
   */
  openTwin(store: Store): Promise<Store>
  /** Called after each test, once the suite has closed its stores. */
  cleanup?(store: Store): Promise<void>
}

/**
 * Opens a store of `adapter` before each test of the calling suite (one of its own with `isolated`), hands it to
 * `use`, and closes it after the test.
 */
export function storePerTest(adapter: StoreAdapter, use: (store: Store) => void, { isolated = false } = {}): void {
  let store: Store
  beforeEach(async () => {
    store = isolated && adapter.createIsolated ? await adapter.createIsolated() : await adapter.create()
    use(store)
  })
  afterEach(async () => {
    await store.close()
    await adapter.cleanup?.(store)
  })
}

export async function expectConflict(work: Promise<unknown>): Promise<void> {
  await expect(work).rejects.toBeInstanceOf(StoreConflictError)
}

/** A promise with its resolve function, to hold a transaction open at a chosen point. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void
  const promise = new Promise<void>((resolve) => {
    open = resolve
  })
  return { promise, open }
}

/**
 * Changes every field of a value returned by the store, deeply, to check that it was a fresh copy. Maps
 * (getMany, findByEmails) are changed too.
 */
export function scramble(value: unknown): void {
  if (value instanceof Map) {
    for (const item of value.values()) scramble(item)
    value.set('scrambled', { id: 'scrambled' })
  } else if (Array.isArray(value)) {
    for (const item of value) scramble(item)
    value.push('scrambled')
  } else if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>
    for (const [key, field] of Object.entries(record)) {
      if (field !== null && typeof field === 'object') scramble(field)
      else record[key] = 'scrambled'
    }
    record.scrambled = true
  }
}

/** Every offset window that reads everything a test writes. */
export const ALL = { offset: 0, limit: 1000 }
