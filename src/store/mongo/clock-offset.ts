import type { Document } from 'bson'
import type { IndexDescription } from 'mongodb'
import type { ClockOffsetRepository } from '../clock-offset.ts'
import { upsertOnce } from './connection.ts'
import { call, type MongoContext, read, writeUnseen } from './context.ts'

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
 * One MongoDB could not serve is StoreBusyError, as a read's, when doing it again is harmless (a read, a `$max`), and
 * StoreUnconfirmedError when it is not (`advance`'s `$inc`: done twice, the clock moves twice).
 */
export function mongoClockOffset(context: MongoContext): ClockOffsetRepository {
  // Outside the transaction whose store this is, if any.
  const outside: MongoContext = { ...context, transaction: null }
  const clock = () => context.connection.db.collection(SERVICE_CLOCK)
  const move = async (update: Document): Promise<number> => {
    const document = await upsertOnce(() => clock().findOneAndUpdate(CONTROLLED, update, { upsert: true, returnDocument: 'after' }))
    return Number(document?.offset_ms ?? 0)
  }
  return {
    read: () =>
      read(outside, async () => {
        const document = await clock().findOne(CONTROLLED)
        return Number(document?.offset_ms ?? 0)
      }),
    advance: (milliseconds) => call(outside, () => move({ $inc: { offset_ms: Math.max(0, milliseconds) } })),
    // `$max` on a missing field sets it: the offset starts at 0 and never goes below it.
    raiseTo: (offsetMs) => writeUnseen(outside, () => move({ $max: { offset_ms: Math.max(0, offsetMs) } })),
  }
}
