/**
 * The controlled clock's offset (`CLOCK=controlled`, `src/clock.ts`): how far the service's time is ahead of the
 * system clock, in milliseconds, kept in the store so that every process sharing it (API instances, workers, the
 * CLI) tells the same time. One value for the whole store, not company data: it is moved outside any transaction,
 * each move committed at once. It only grows (time never goes back).
 */
export interface ClockOffsetRepository {
  /** The offset now: 0 until the clock was first moved. One read of the committed value. */
  read(): Promise<number>
  /** Adds `milliseconds` (at least 0) to the offset, atomically across processes; returns the new offset. */
  advance(milliseconds: number): Promise<number>
  /**
   * Raises the offset to `offsetMs` when it is below it, atomically across processes (never lowers it);
   * returns the offset it then has.
   */
  raiseTo(offsetMs: number): Promise<number>
}
