import type { ImportStatus } from './model.ts'

/**
 * Operational counts over the imports of every company, for the metrics: not company data, so the one
 * place where a store operation reads across companies. Never writes.
 */
export interface ImportStatisticsRepository {
  /** How many imports are in each status right now, every status present (0 when none). One consistent read. */
  countByStatus(): Promise<Record<ImportStatus, number>>
}
