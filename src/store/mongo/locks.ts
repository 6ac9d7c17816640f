import type { Document } from 'bson'
import type { ClientSession } from 'mongodb'
import { lookupId } from './codec.ts'
import { IMPORT_LOCKS } from './collections.ts'
import { upsertOnce } from './connection.ts'
import { collectionOf, inSession, type MongoContext, writeUnseen } from './context.ts'

/**
 * The lock documents of `import_locks` (see IMPORT_LOCKS): one per (company, purpose). The filter names the
 * company as well as the `_id`: on a cluster that shards the collection by company, an upsert must carry the
 * whole shard key.
 */
export function lockFilter(companyId: string, purpose: string): Document {
  return { _id: `${purpose}:${companyId}`, company_id: lookupId(companyId) }
}

/** The purpose of the lock that serializes the transactions naming a company (`Store.transaction`). */
export const COMPANY_LOCK = 'transaction'

/**
 * Writes the lock document of (company, purpose) in the session's transaction: two transactions that both
 * write it cannot both commit (one of them conflicts and is run again), whatever else they read and write.
 * `$inc` always changes the document: a `$set` of an equal value would be a no-op, and a no-op conflicts with
 * nothing. Create the document first with `ensureLock`.
 */
export async function writeLock(
  context: MongoContext,
  session: ClientSession | undefined,
  companyId: string,
  purpose: string,
): Promise<void> {
  await collectionOf(context, IMPORT_LOCKS).updateOne(
    lockFilter(companyId, purpose),
    { $inc: { version: 1 } },
    { ...inSession(session), upsert: true },
  )
}

/**
 * Creates the lock document outside any transaction, when missing: an upsert inside one racing another
 * could fail with a duplicate key. Inside a transaction it does nothing (the document exists once any
 * transaction of the same purpose ran; if not, `writeLock`'s upsert creates it). Two first uses at once (a new
 * company's first upserts, a worker's claim beside them) both try the insert: the loser tries again and finds the
 * winner's document, since the server retries such an upsert itself only when its filter is the unique index's
 * fields alone, and this one names the company too.
 */
export async function ensureLock(context: MongoContext, companyId: string, purpose: string): Promise<void> {
  if (context.transaction) return
  await writeUnseen(context, () =>
    upsertOnce(() =>
      collectionOf(context, IMPORT_LOCKS).updateOne(lockFilter(companyId, purpose), { $setOnInsert: { version: 0 } }, { upsert: true }),
    ),
  )
}
