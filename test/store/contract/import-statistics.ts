import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src/clock.ts'
import { enqueueImport } from '../../../src/imports/enqueue.ts'
import type { Company } from '../../../src/store/model.ts'
import type { Store } from '../../../src/store/port.ts'
import { aCompany } from '../builders.ts'
import { storePerTest, type StoreAdapter } from './support.ts'

const NOW = '2026-06-01T10:00:00.000Z'
const LATER = '2026-06-01T10:10:00.000Z'

/** A scheduled import of the company, through the service that the upsert routes use. */
async function enqueue(store: Store, company: Company, target: 'users' | 'managers' | 'groups'): Promise<void> {
  await enqueueImport(store, new ManualClock(NOW), { company, target, items: [], bytes: 11, queueLimitBytes: 1024 })
}

/** `store.importStatistics`, for every adapter. Counts are compared before and after, as the store may be shared. */
export function importStatisticsContract(adapter: StoreAdapter): void {
  describe('import statistics', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened), { isolated: true })

    it('counts the unfinished imports of every company by status, both present', async () => {
      const before = await store.importStatistics.countUnfinished()
      expect(Object.keys(before).toSorted()).toEqual(['scheduled', 'started'])

      const [one, two] = [aCompany(), aCompany()]
      await store.companies.insert(one)
      await store.companies.insert(two)
      await enqueue(store, one, 'users')
      await enqueue(store, one, 'managers')
      await enqueue(store, two, 'users')
      expect(await store.importStatistics.countUnfinished()).toEqual({ ...before, scheduled: before.scheduled + 3 })

      const claimed = await store.imports.claimNext('worker-1', LATER, '2026-06-01T10:11:00.000Z')
      expect(claimed).not.toBeNull()
      expect(await store.importStatistics.countUnfinished()).toEqual({ scheduled: before.scheduled + 2, started: before.started + 1 })

      await store.imports.finish(claimed!.company_id, claimed!.id, 'worker-1', { finished_at: LATER, error: false, details: [] })
      expect(await store.importStatistics.countUnfinished()).toEqual({ scheduled: before.scheduled + 2, started: before.started })
    })

    it('gives the earliest window end of the scheduled imports, null when none is scheduled', async () => {
      expect(await store.importStatistics.oldestScheduledDueAt()).toBeNull()
      const [one, two] = [aCompany(), aCompany()]
      await store.companies.insert(one)
      await store.companies.insert(two)
      const enqueueAt = (at: string, company: Company, target: 'users' | 'managers', debounceSeconds: number) =>
        enqueueImport(store, new ManualClock(at), {
          company,
          target,
          items: [],
          debounceSeconds,
          bytes: 2,
          queueLimitBytes: Number.MAX_SAFE_INTEGER,
        })
      const dueAt = new Map<string, string>()
      // Enqueued first, but held in a debounce window until 10:05: it is due after the others.
      dueAt.set((await enqueueAt('2026-06-01T09:55:00.000Z', one, 'managers', 600)).import_id, '2026-06-01T10:05:00.000Z')
      dueAt.set((await enqueueAt('2026-06-01T10:00:00.000Z', one, 'users', 0)).import_id, '2026-06-01T10:00:00.000Z')
      dueAt.set((await enqueueAt('2026-06-01T10:02:00.000Z', two, 'users', 0)).import_id, '2026-06-01T10:02:00.000Z')
      expect(await store.importStatistics.oldestScheduledDueAt()).toBe('2026-06-01T10:00:00.000Z')

      // A started import no longer counts: the oldest of those still scheduled does.
      const claimed = await store.imports.claimNext('worker-1', LATER, '2026-06-01T10:11:00.000Z')
      expect(claimed).not.toBeNull()
      dueAt.delete(claimed!.id)
      expect(await store.importStatistics.oldestScheduledDueAt()).toBe([...dueAt.values()].toSorted()[0])
    })
  })
}
