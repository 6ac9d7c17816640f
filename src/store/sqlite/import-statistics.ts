import type { ImportStatisticsRepository } from '../import-statistics.ts'
import type { ImportStatus } from '../model.ts'
import type { Sql } from './connection.ts'

/** Counts imports by status with one grouped read of the `imports` table (its `(status, id)` index). */
export function sqliteImportStatistics(sql: Sql): ImportStatisticsRepository {
  return {
    async countByStatus() {
      const counts: Record<ImportStatus, number> = { scheduled: 0, started: 0, finished: 0 }
      for (const row of await sql.all('SELECT status, count(*) AS n FROM imports GROUP BY status')) {
        counts[row.status as ImportStatus] = Number(row.n)
      }
      return counts
    },
    async oldestScheduledDueAt() {
      const row = await sql.get("SELECT min(window_ends_at) AS due FROM imports WHERE status = 'scheduled'")
      return typeof row?.due === 'string' ? row.due : null
    },
  }
}
