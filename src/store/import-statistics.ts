/**
 * Operational counts over the imports of every company, for the metrics: not company data, so the one
 * place where a store operation reads across companies. Never writes.
 */
export interface ImportStatisticsRepository {
  /**
   * How many imports wait (`scheduled`) and run (`started`) right now, both present (0 when none). One consistent
   * read, of those imports only: finished imports are kept, and counting them would cost a scan of all of them.
   */
  countUnfinished(): Promise<UnfinishedImports>
  /**
   * The earliest `window_ends_at` of the scheduled imports: since then, the import that has waited longest
   * could have run. Null when no import is scheduled. (An import still in its debounce window has a
   * `window_ends_at` in the future.)
   */
  oldestScheduledDueAt(): Promise<string | null>
}

export interface UnfinishedImports {
  scheduled: number
  started: number
}
