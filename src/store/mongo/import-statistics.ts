import type { ImportStatisticsRepository } from '../import-statistics.ts'
import type { ImportStatus } from '../model.ts'
import { IMPORTS } from './collections.ts'
import { call, collectionOf, inSession, type MongoContext } from './context.ts'

const STATUSES: readonly ImportStatus[] = ['scheduled', 'started', 'finished']

/** Per-status counts from one `$group` aggregation, in one consistent read. */
export function countsFrom(groups: ReadonlyArray<{ _id: unknown; n: number }>): Record<ImportStatus, number> {
  const counts = Object.fromEntries(STATUSES.map((status) => [status, 0])) as Record<ImportStatus, number>
  for (const group of groups) {
    if ((STATUSES as readonly unknown[]).includes(group._id)) counts[group._id as ImportStatus] = group.n
  }
  return counts
}

export function mongoImportStatistics(context: MongoContext): ImportStatisticsRepository {
  return {
    countByStatus: () =>
      call(context, async (session) => {
        // Outside a transaction, read concern "snapshot" (MongoDB 5.0+) makes the aggregation one point-in-time
        // read; inside one, the transaction's snapshot already is (a read concern may not be set per operation).
        const readConcern = session ? {} : { readConcern: { level: 'snapshot' as const } }
        const groups = await collectionOf(context, IMPORTS)
          .aggregate<{ _id: unknown; n: number }>([{ $group: { _id: '$status', n: { $sum: 1 } } }], {
            ...inSession(session),
            ...readConcern,
          })
          .toArray()
        return countsFrom(groups)
      }),
    oldestScheduledDueAt: () =>
      call(context, async (session) => {
        const [oldest] = await collectionOf(context, IMPORTS)
          .find(
            { status: 'scheduled' },
            { ...inSession(session), sort: { window_ends_at: 1 }, limit: 1, projection: { _id: 0, window_ends_at: 1 } },
          )
          .toArray()
        return typeof oldest?.window_ends_at === 'string' ? oldest.window_ends_at : null
      }),
  }
}
