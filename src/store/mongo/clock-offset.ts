import type { Document } from 'bson'
import type { IndexDescription } from 'mongodb'
import type { ClockOffsetRepository } from '../clock-offset.ts'
import { upsertOnce } from './connection.ts'
import type { MongoContext } from './context.ts'

/** One document, `{_id: 'controlled', offset_ms}`. Not company data: never in a transaction. */
export const SERVICE_CLOCK = 'service_clock'

/** The collection, created at start-up (no index beyond `_id`). */
export const CLOCK_INDEXES: ReadonlyMap<string, readonly IndexDescription[]> = new Map<string, readonly IndexDescription[]>([
  [SERVICE_CLOCK, []],
])

const CONTROLLED = { _id: 'controlled' } as Document

/**
 * The controlled clock's offset, shared by every instance: each move is one upserting `findOneAndUpdate`
 * (`$inc`, `$max`), atomic on the one document. A read is outside any transaction, so it sees the last commit.
 */
export function mongoClockOffset(context: MongoContext): ClockOffsetRepository {
  const clock = () => {
    if (context.state.closed) throw new Error('the MongoDB store is closed')
    return context.connection.db.collection(SERVICE_CLOCK)
  }
  const move = async (update: Document): Promise<number> => {
    const document = await upsertOnce(() => clock().findOneAndUpdate(CONTROLLED, update, { upsert: true, returnDocument: 'after' }))
    return Number(document?.offset_ms ?? 0)
  }
  return {
    async read() {
      const document = await clock().findOne(CONTROLLED)
      return Number(document?.offset_ms ?? 0)
    },
    advance: (milliseconds) => move({ $inc: { offset_ms: Math.max(0, milliseconds) } }),
    // `$max` on a missing field sets it: the offset starts at 0 and never goes below it.
    raiseTo: (offsetMs) => move({ $max: { offset_ms: Math.max(0, offsetMs) } }),
  }
}
