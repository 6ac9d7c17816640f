import type { ImportStatus } from './model.ts'

/**
 * Operational counts over the imports of every company, for the metrics: not company data, so the one
 * place where a store operation reads across companies. Never writes.
 */
export interface ImportStatisticsRepository {
  /** How many imports are in each status right now, every status present (0 when none). One consistent read. */
  countByStatus(): Promise<Record<ImportStatus, number>>
  /**
   * The earliest `window_ends_at` of the scheduled imports: since then, the import that has waited longest
   * could have run. Null when no import is scheduled. (An import still in its debounce window has a
   * `window_ends_at` in the future.)
   */
  oldestScheduledDueAt(): Promise<string | null>
}
