import { afterEach, beforeEach } from 'vitest'
import { ManualClock } from '../../src/clock.ts'
import { ImportWorker } from '../../src/imports/worker.ts'
import { openTestStore, type TestStore } from './test-store.ts'

export interface StoreWithWorker {
  test: TestStore
  clock: ManualClock
  /** Drained by the test (never started); a test may put another in its place, which is stopped after it. */
  worker: ImportWorker
}

/** Gives each test of the file a fresh store, a controlled clock at `start`, and an import worker over them. */
export function eachStoreWithWorker(owner: string, start = '2026-05-01T00:00:00.000Z'): StoreWithWorker {
  const context = {} as StoreWithWorker
  beforeEach(async () => {
    context.test = await openTestStore()
    context.clock = new ManualClock(start)
    context.worker = new ImportWorker({ store: context.test.store, clock: context.clock, owner })
  })
  afterEach(async () => {
    await context.worker.stop()
    await context.test.dispose()
  })
  return context
}
