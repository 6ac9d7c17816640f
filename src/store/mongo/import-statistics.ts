import type { ImportStatisticsRepository, UnfinishedImports } from '../import-statistics.ts'
import { IMPORTS } from './collections.ts'
import { collectionOf, inSession, type MongoContext, read } from './context.ts'

const UNFINISHED = ['scheduled', 'started'] as const

/** The counts of one `$group` aggregation by status, 0 for a status with none. */
export function countsFrom(groups: ReadonlyArray<{ _id: unknown; n: number }>): UnfinishedImports {
  const counts: UnfinishedImports = { scheduled: 0, started: 0 }
  for (const group of groups) {
    if ((UNFINISHED as readonly unknown[]).includes(group._id)) counts[group._id as keyof UnfinishedImports] = group.n
  }
  return counts
}

export function mongoImportStatistics(context: MongoContext): ImportStatisticsRepository {
  return {
    countUnfinished: () =>
      read(context, async (session) => {
        // Outside a transaction, read concern "snapshot" (MongoDB 5.0+) makes the aggregation one point-in-time
        // read; inside one, the transaction's snapshot already is (a read concern may not be set per operation).
        const readConcern = session ? {} : { readConcern: { level: 'snapshot' as const } }
        const groups = await collectionOf(context, IMPORTS)
          // The match reads the unfinished imports' part of the `status_id` index only.
          .aggregate<{ _id: unknown; n: number }>(
            [{ $match: { status: { $in: UNFINISHED } } }, { $group: { _id: '$status', n: { $sum: 1 } } }],
            {
              ...inSession(session),
              ...readConcern,
            },
          )
          .toArray()
        return countsFrom(groups)
      }),
    oldestScheduledDueAt: () =>
      read(context, async (session) => {
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
