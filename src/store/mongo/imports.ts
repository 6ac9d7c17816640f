import type { Document } from 'bson'
import type { ClientSession, IndexDescription } from 'mongodb'
import type { DataImport, ImportPayload } from '../model.ts'
import { type ImportOutcome, ImportQueueFullError, type ImportRepository } from '../port.ts'
import { decode, encode, lookupId } from './codec.ts'
import { IMPORT_LOCKS, IMPORT_PAYLOADS, IMPORTS } from './collections.ts'
import { byId, inCompany } from './filters.ts'
import { atomically, call, collectionOf, findAll, findOne, inSession, type Scope } from './scope.ts'

export const IMPORT_INDEXES: ReadonlyMap<string, readonly IndexDescription[]> = new Map<string, readonly IndexDescription[]>([
  [
    IMPORTS.collection,
    [
      // enqueue: the open import of (company, join key).
      { key: { company_id: 1, join_key: 1, status: 1, window_ends_at: 1 }, name: 'company_join_open' },
      // claimNext: is another import of the company running?
      { key: { company_id: 1, status: 1, lease_expires_at: 1 }, name: 'company_running' },
      // claimNext: the oldest runnable imports of every company (the worker's scan, the one cross-company query).
      { key: { status: 1, _id: 1 }, name: 'status_id' },
    ],
  ],
  [IMPORT_PAYLOADS.collection, [{ key: { company_id: 1, import_id: 1, _id: 1 }, name: 'company_import_id' }]],
  [IMPORT_LOCKS.collection, [{ key: { company_id: 1 }, name: 'company_id' }]],
])

/** How many runnable imports one claim looks at: enough to pass those of companies busy with another one. */
const CANDIDATES = 50

/** Runnable at `now`: scheduled with its window closed, or started with a lease that expired (its worker died). */
export function runnable(now: string): Document {
  return {
    $or: [
      { status: 'scheduled', window_ends_at: { $lte: now } },
      { status: 'started', lease_expires_at: { $lte: now } },
    ],
  }
}

/** The claim's update: a pipeline, so that `launched_at` keeps its first value and `attempts` counts up. */
export function claimUpdate(owner: string, now: string, leaseExpiresAt: string): Document[] {
  return [
    {
      $set: {
        status: 'started',
        lease_owner: owner,
        lease_expires_at: leaseExpiresAt,
        launched_at: { $ifNull: ['$launched_at', now] },
        attempts: { $add: [{ $ifNull: ['$attempts', 0] }, 1] },
      },
    },
  ]
}

/** The held import: started and owned by `owner` (the condition of renew, release and finish). */
function held(companyId: string, id: string, owner: string): Document {
  return { ...byId(companyId, id), status: 'started', lease_owner: owner }
}

export function mongoImports(scope: Scope): ImportRepository {
  const imports = () => collectionOf(scope, IMPORTS)

  /** Writes the lock document of `purpose`, creating it first outside any transaction (see IMPORT_LOCKS). */
  async function lock(session: ClientSession | undefined, companyId: string, purpose: string, now: string): Promise<void> {
    await collectionOf(scope, IMPORT_LOCKS).updateOne(
      { _id: `${purpose}:${companyId}` } as Document,
      // $inc always changes the document: a $set of an equal value would be a no-op, and a no-op conflicts with nothing.
      { $set: { company_id: lookupId(companyId), at: now }, $inc: { version: 1 } },
      { ...inSession(session), upsert: true },
    )
  }

  /** Creates the lock document outside a transaction: an upsert racing another inside one could fail with a duplicate key. */
  async function ensureLock(companyId: string, purpose: string): Promise<void> {
    if (scope.transaction) return
    await call(scope, () =>
      collectionOf(scope, IMPORT_LOCKS).updateOne(
        { _id: `${purpose}:${companyId}` } as Document,
        { $setOnInsert: { company_id: lookupId(companyId) } },
        { upsert: true },
      ),
    )
  }

  /** Claims `candidate` unless another import of its company runs: 'busy' then, null when it was taken meanwhile. */
  function claim(candidate: Document, owner: string, now: string, leaseExpiresAt: string): Promise<DataImport | 'busy' | null> {
    const companyId = String(candidate.company_id)
    return atomically(scope, async (session) => {
      const running = await imports().findOne(
        inCompany(companyId, { status: 'started', lease_expires_at: { $gt: now }, _id: { $ne: candidate._id } }),
        inSession(session),
      )
      if (running) return 'busy'
      await lock(session, companyId, 'claim', now)
      // The claim itself: one conditional findOneAndUpdate whose predicate an expired lease also satisfies.
      const claimed = await imports().findOneAndUpdate(
        { _id: candidate._id, company_id: candidate.company_id, ...runnable(now) },
        claimUpdate(owner, now, leaseExpiresAt),
        { ...inSession(session), returnDocument: 'after' },
      )
      return claimed ? decode<DataImport>(IMPORTS, claimed) : null
    })
  }

  /** The company's queued bytes, read in the session (see `queuedBytes`). */
  async function queued(session: ClientSession | undefined, companyId: string): Promise<number> {
    const [sum] = await imports()
      .aggregate<{ bytes: number }>(
        [{ $match: inCompany(companyId, { status: { $in: ['scheduled', 'started'] } }) }, { $group: { _id: null, bytes: { $sum: '$payload_bytes' } } }],
        inSession(session),
      )
      .toArray()
    return sum?.bytes ?? 0
  }

  return {
    async enqueue(fresh, payload, now, maxQueuedBytes) {
      await ensureLock(fresh.company_id, `join:${fresh.join_key}`)
      if (maxQueuedBytes !== undefined) await ensureLock(fresh.company_id, 'queue')
      return atomically(scope, async (session) => {
        await lock(session, fresh.company_id, `join:${fresh.join_key}`, now)
        if (maxQueuedBytes !== undefined) {
          // Every bounded enqueue of the company writes this lock: two of them, for different join keys, that
          // both read the sum below conflict, and the one run again sees the other's payload.
          await lock(session, fresh.company_id, 'queue', now)
          const bytes = await queued(session, fresh.company_id)
          if (bytes > 0 && bytes + payload.bytes > maxQueuedBytes) throw new ImportQueueFullError(bytes)
        }
        const detail = { payload_id: payload.id, number_of_records: payload.items.length, error: null }
        let joined: Document | null = await imports().findOneAndUpdate(
          inCompany(fresh.company_id, { join_key: fresh.join_key, status: 'scheduled', window_ends_at: { $gt: now } }),
          { $push: { details: detail }, $inc: { payload_bytes: payload.bytes } } as Document,
          { ...inSession(session), sort: { _id: 1 }, returnDocument: 'after' },
        )
        if (!joined) {
          joined = encode(IMPORTS, { ...fresh, details: [detail], payload_bytes: fresh.payload_bytes + payload.bytes })
          await imports().insertOne(joined, inSession(session))
        }
        const stored: ImportPayload = { ...payload, import_id: String(joined._id) }
        await collectionOf(scope, IMPORT_PAYLOADS).insertOne(encode(IMPORT_PAYLOADS, stored), inSession(session))
        return decode<DataImport>(IMPORTS, joined)
      })
    },

    queuedBytes: (companyId) => call(scope, (session) => queued(session, companyId)),

    get: (companyId, id) => findOne<DataImport>(scope, IMPORTS, byId(companyId, id)),

    payloads: (companyId, importId) => findAll<ImportPayload>(scope, IMPORT_PAYLOADS, inCompany(companyId, { import_id: lookupId(importId) })),

    async claimNext(owner, now, leaseExpiresAt) {
      // The scan reads outside any transaction; each claim re-checks its candidate inside one.
      const candidates = await call(scope, (session) =>
        imports()
          .find(runnable(now), { ...inSession(session), sort: { _id: 1 }, limit: CANDIDATES, projection: { _id: 1, company_id: 1 } })
          .toArray(),
      )
      const busy = new Set<string>()
      for (const candidate of candidates) {
        const companyId = String(candidate.company_id)
        if (busy.has(companyId)) continue
        await ensureLock(companyId, 'claim')
        const claimed = await claim(candidate, owner, now, leaseExpiresAt)
        if (claimed === 'busy') busy.add(companyId)
        else if (claimed) return claimed
      }
      return null
    },

    renewLease: (companyId, id, owner, leaseExpiresAt) =>
      call(scope, async (session) => {
        const result = await imports().updateOne(held(companyId, id, owner), { $set: { lease_expires_at: leaseExpiresAt } }, inSession(session))
        return result.matchedCount > 0
      }),

    release: (companyId, id, owner) =>
      call(scope, async (session) => {
        const result = await imports().updateOne(
          held(companyId, id, owner),
          { $set: { status: 'scheduled', lease_owner: null, lease_expires_at: null } },
          inSession(session),
        )
        return result.matchedCount > 0
      }),

    finish: (companyId, id, owner, outcome: ImportOutcome) =>
      call(scope, async (session) => {
        const result = await imports().updateOne(
          held(companyId, id, owner),
          {
            $set: {
              status: 'finished',
              lease_owner: null,
              lease_expires_at: null,
              finished_at: outcome.finished_at,
              error: outcome.error,
              details: outcome.details,
            },
          },
          inSession(session),
        )
        return result.matchedCount > 0
      }),
  }
}
