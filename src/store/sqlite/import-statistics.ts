import type { ImportStatisticsRepository, UnfinishedImports } from '../import-statistics.ts'
import type { Sql } from './connection.ts'

/** Counts the unfinished imports with one grouped read of their part of the `(status, id)` index. */
export function sqliteImportStatistics(sql: Sql): ImportStatisticsRepository {
  return {
    async countUnfinished() {
      const counts: UnfinishedImports = { scheduled: 0, started: 0 }
      const rows = await sql.all("SELECT status, count(*) AS n FROM imports WHERE status IN ('scheduled', 'started') GROUP BY status")
      for (const row of rows) counts[row.status as keyof UnfinishedImports] = Number(row.n)
      return counts
    },
    async oldestScheduledDueAt() {
      const row = await sql.get("SELECT min(window_ends_at) AS due FROM imports WHERE status = 'scheduled'")
      return typeof row?.due === 'string' ? row.due : null
    },
  }
}
