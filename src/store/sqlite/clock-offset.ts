import type { ClockOffsetRepository } from '../clock-offset.ts'
import type { Sql } from './connection.ts'

/** The one row of `service_clock`. */
const CONTROLLED = 'controlled'

/**
 * The controlled clock's offset in the main file, so that it survives a restart as the data does. Each move is
 * one UPSERT, which SQLite applies atomically whichever process shares the file; a read sees the last commit.
 * The offset starts at 0 and never goes below it.
 */
export function sqliteClockOffset(sql: Sql): ClockOffsetRepository {
  const move = (update: string, milliseconds: number) =>
    sql.write((db) => {
      const [[offset]] = db.values(
        `INSERT INTO service_clock (id, offset_ms) VALUES (?1, max(0, ?2)) ON CONFLICT (id) DO UPDATE SET offset_ms = ${update} RETURNING offset_ms`,
        CONTROLLED,
        milliseconds,
      )
      return Number(offset)
    })
  return {
    async read() {
      const row = await sql.get('SELECT offset_ms FROM service_clock WHERE id = ?', CONTROLLED)
      return Number(row?.offset_ms ?? 0)
    },
    advance: (milliseconds) => move('offset_ms + excluded.offset_ms', milliseconds),
    raiseTo: (offsetMs) => move('max(offset_ms, excluded.offset_ms)', offsetMs),
  }
}
