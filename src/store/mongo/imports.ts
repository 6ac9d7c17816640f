import type { Document, ObjectId } from 'bson'
import type { ClientSession, IndexDescription } from 'mongodb'
import {
  type DataImport,
  type ImportPayload,
  latestImportDeadline,
  type ResendKeys,
  resendWindow,
  scheduledDetail,
  turnsOf,
} from '../model.ts'
import { type ImportOutcome, type ImportProgress, ImportQueueFullError, type ImportRepository } from '../port.ts'
import { idAfter } from '../../ids.ts'
import { decode, encode, lookupId } from './codec.ts'
import { IMPORT_LOCKS, IMPORT_PAYLOAD_PARTS, IMPORT_PAYLOADS, IMPORT_REQUEST_IDS, IMPORTS } from './collections.ts'
import { ensureLock, writeLock } from './locks.ts'
import { partCount, payloadFrom, storedPayload } from './payload-parts.ts'
import { byId, inCompany } from './filters.ts'
import { atomically, call, collectionOf, inSession, type MongoContext, read, writeUnseen } from './context.ts'
import { findOne } from './operations.ts'

export const IMPORT_INDEXES: ReadonlyMap<string, readonly IndexDescription[]> = new Map<string, readonly IndexDescription[]>([
  [
    IMPORTS.collection,
    [
      // list: a company's imports, newest first, whatever their status (the admin list); without it every
      // import the company ever had is read and sorted.
      { key: { company_id: 1, _id: 1 }, name: 'company_id' },
      // enqueue: the open import of (company, join key).
      { key: { company_id: 1, join_key: 1, status: 1, window_ends_at: 1 }, name: 'company_join_open' },
      // claimNext: is another import of the company running?
      { key: { company_id: 1, status: 1, lease_expires_at: 1 }, name: 'company_running' },
      // claimNext: the oldest runnable imports of every company (the worker's scan, the one cross-company query).
      { key: { status: 1, _id: 1 }, name: 'status_id' },
      // purgeFinished: the finished imports by their finish time (IMPORT_RETENTION_DAYS).
      { key: { status: 1, finished_at: 1 }, name: 'status_finished_at' },
    ],
  ],
  [
    IMPORT_PAYLOADS.collection,
    [
      { key: { company_id: 1, import_id: 1, _id: 1 }, name: 'company_import_id' },
      // payloads: an import's calls in the order they were stored.
      { key: { company_id: 1, import_id: 1, position: 1, _id: 1 }, name: 'company_import_position' },
    ],
  ],
  [IMPORT_PAYLOAD_PARTS.collection, [{ key: { company_id: 1, payload_id: 1, index: 1 }, name: 'company_payload_index' }]],
  [
    IMPORT_REQUEST_IDS.collection,
    [
      { key: { company_id: 1, id_key: 1 }, name: 'company_id_key_unique', unique: true },
      // enqueue: the company's keys past their hour, which go.
      { key: { company_id: 1, received_at: 1 }, name: 'company_received_at' },
    ],
  ],
  [IMPORT_LOCKS.collection, [{ key: { company_id: 1 }, name: 'company_id' }]],
])

/**
 * Runnable at `now`: scheduled with its window closed, or started with a lease that expired (its worker died); a
 * window or lease past `latestImportDeadline` counts as closed or expired.
 */
export function runnable(now: string): Document {
  // One branch a status, as before the deadlines: a scan by id stops at the first runnable import.
  return {
    $or: [
      { status: 'scheduled', window_ends_at: { $not: live(now) } },
      { status: 'started', lease_expires_at: { $not: live(now) } },
    ],
  }
}

/** A window still open, or a lease that still holds, at `now`. */
const live = (now: string): Document => ({ $gt: now, $lte: latestImportDeadline(now) })

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

export function mongoImports(context: MongoContext): ImportRepository {
  const imports = () => collectionOf(context, IMPORTS)

  /** Claims `candidate` unless another import of its company runs: 'busy' then, null when it was taken meanwhile. */
  function claim(candidate: Document, owner: string, now: string, leaseExpiresAt: string): Promise<DataImport | 'busy' | null> {
    const companyId = String(candidate.company_id)
    return atomically(context, async (session) => {
      const running = await imports().findOne(
        inCompany(companyId, { status: 'started', lease_expires_at: live(now), _id: { $ne: candidate._id } }),
        inSession(session),
      )
      if (running) return 'busy'
      await writeLock(context, session, companyId, 'claim')
      // The claim itself: one conditional findOneAndUpdate whose predicate an expired lease also satisfies.
      const claimed = await imports().findOneAndUpdate(
        { _id: candidate._id, company_id: candidate.company_id, ...runnable(now) },
        claimUpdate(owner, now, leaseExpiresAt),
        { ...inSession(session), returnDocument: 'after' },
      )
      return claimed ? decode<DataImport>(IMPORTS, claimed) : null
    })
  }

  /**
   * The transaction of `enqueue`, its payload's parts written: joins the open import of the call's join key or
   * makes one, within the company's bound, and stores the payload's document; `stored` is false when the call was
   * sent again, and the import that took it the first time is answered instead.
   */
  function enqueueWritten(
    fresh: DataImport,
    payload: Omit<ImportPayload, 'import_id'>,
    document: Document,
    now: string,
    maxQueuedBytes: number | undefined,
  ): Promise<{ joined: DataImport; stored: boolean }> {
    return atomically(context, async (session) => {
      await writeLock(context, session, fresh.company_id, `join:${fresh.join_key}`)
      const sentAgain = payload.resend === undefined ? null : await importSentAgain(session, fresh.company_id, payload.resend, now)
      if (sentAgain) return { joined: sentAgain, stored: false }
      if (maxQueuedBytes !== undefined) {
        // Every bounded enqueue of the company writes this lock: two of them, for different join keys, that
        // both read the sum below conflict, and the one run again sees the other's payload.
        await writeLock(context, session, fresh.company_id, 'queue')
        const bytes = await queued(session, fresh.company_id)
        if (bytes > 0 && bytes + payload.bytes > maxQueuedBytes) throw new ImportQueueFullError(bytes)
      }
      const detail = scheduledDetail(payload)
      let joined: Document | null = await imports().findOneAndUpdate(
        // An import made without a debounce has no window, even for a call whose clock reads earlier (see SQLite's).
        inCompany(fresh.company_id, {
          join_key: fresh.join_key,
          status: 'scheduled',
          window_ends_at: live(now),
          $expr: { $gt: ['$window_ends_at', '$created_at'] },
        }),
        { $push: { details: detail }, $inc: { payload_bytes: payload.bytes } } as Document,
        { ...inSession(session), sort: { _id: 1 }, returnDocument: 'after' },
      )
      if (!joined) {
        // After the company's imports still to run, whoever made their ids: they are claimed in id order.
        const latest = await imports().findOne(inCompany(fresh.company_id, { status: { $in: ['scheduled', 'started'] } }), {
          ...inSession(session),
          sort: { _id: -1 },
          projection: { _id: 1 },
        })
        const id = idAfter(fresh.id, latest ? String(latest._id) : null)
        joined = encode(IMPORTS, { ...fresh, id, details: [detail], payload_bytes: fresh.payload_bytes + payload.bytes })
        await imports().insertOne(joined, inSession(session))
      }
      // Its place among the import's calls is its detail's: the order the calls were stored in.
      const position = (joined.details as unknown[]).length - 1
      await collectionOf(context, IMPORT_PAYLOADS).insertOne({ ...document, import_id: joined._id, position }, inSession(session))
      if (payload.resend !== undefined) {
        await collectionOf(context, IMPORT_REQUEST_IDS).updateOne(
          inCompany(fresh.company_id, { id_key: payload.resend.id_key }),
          { $set: { call_key: payload.resend.call_key, import_id: joined._id, received_at: now } },
          { ...inSession(session), upsert: true },
        )
      }
      return { joined: decode<DataImport>(IMPORTS, joined), stored: true }
    })
  }

  /**
   * Removes the parts of a payload whose document was never stored, which nothing can read. Best effort: what the
   * caller must see is the enqueue's outcome, not a failure of this cleanup.
   */
  async function removeUnreadParts(companyId: string, payloadId: unknown): Promise<void> {
    await call(context, (session) =>
      collectionOf(context, IMPORT_PAYLOAD_PARTS).deleteMany(inCompany(companyId, { payload_id: payloadId }), inSession(session)),
    ).catch(() => undefined)
  }

  /**
   * The import of the call that `resend` names, when it is the latest call stored under its request id within
   * `resendWindow(now)` and its import is still there; the company's ids remembered longer than that go.
   */
  async function importSentAgain(session: ClientSession | undefined, companyId: string, resend: ResendKeys, now: string) {
    const remembered = collectionOf(context, IMPORT_REQUEST_IDS)
    const { since, until } = resendWindow(now)
    await remembered.deleteMany(inCompany(companyId, { received_at: { $lt: since } }), inSession(session))
    const latest = await remembered.findOne(
      inCompany(companyId, { id_key: resend.id_key, call_key: resend.call_key, received_at: { $gte: since, $lte: until } }),
      inSession(session),
    )
    const found = latest ? await imports().findOne(inCompany(companyId, { _id: latest.import_id }), inSession(session)) : null
    return found ? decode<DataImport>(IMPORTS, found) : null
  }

  /** Deletes the import's payloads, with the parts of those split over several documents. */
  async function deletePayloadsOf(session: ClientSession | undefined, companyId: string, id: string): Promise<void> {
    const payloads = collectionOf(context, IMPORT_PAYLOADS)
    const split = await payloads
      .find(inCompany(companyId, { import_id: lookupId(id), items_parts: { $gt: 1 } }), {
        ...inSession(session),
        projection: { _id: 1 },
      })
      .toArray()
    if (split.length > 0)
      await collectionOf(context, IMPORT_PAYLOAD_PARTS).deleteMany(
        inCompany(companyId, { payload_id: { $in: split.map((document) => document._id) } }),
        inSession(session),
      )
    await payloads.deleteMany(inCompany(companyId, { import_id: lookupId(id) }), inSession(session))
  }

  /** The company's queued bytes, read in the session (see `queuedBytes`). */
  async function queued(session: ClientSession | undefined, companyId: string): Promise<number> {
    const [sum] = await imports()
      .aggregate<{ bytes: number }>(
        [
          { $match: inCompany(companyId, { status: { $in: ['scheduled', 'started'] } }) },
          { $group: { _id: null, bytes: { $sum: '$payload_bytes' } } },
        ],
        inSession(session),
      )
      .toArray()
    return sum?.bytes ?? 0
  }

  return {
    async enqueue(fresh, payload, now, maxQueuedBytes) {
      await ensureLock(context, fresh.company_id, `join:${fresh.join_key}`)
      if (maxQueuedBytes !== undefined) await ensureLock(context, fresh.company_id, 'queue')
      // The parts of a large payload are written first, outside the transaction, which then stays small: until
      // the payload's document commits, nothing refers to them (an enqueue that fails leaves them unread).
      const { payload: document, parts } = storedPayload({ ...payload, import_id: fresh.id })
      if (parts.length > 0)
        await writeUnseen(context, (session) =>
          collectionOf(context, IMPORT_PAYLOAD_PARTS).insertMany(parts, { ...inSession(session), ordered: true }),
        )
      // The parts are certainly unread when the payload's document was not stored: a full queue is found before
      // anything commits, and a call sent again commits without it. They go, as a client sending a large body again
      // and again (while its queue is full, or retrying) would pile them up. After another failure the transaction
      // may have committed (an unknown commit result): its parts stay.
      let written: { joined: DataImport; stored: boolean }
      try {
        written = await enqueueWritten(fresh, payload, document, now, maxQueuedBytes)
      } catch (error) {
        if (error instanceof ImportQueueFullError && parts.length > 0) await removeUnreadParts(fresh.company_id, document._id)
        throw error
      }
      if (!written.stored && parts.length > 0) await removeUnreadParts(fresh.company_id, document._id)
      return written.joined
    },

    queuedBytes: (companyId) => read(context, (session) => queued(session, companyId)),

    async remembersRequest(companyId, idKey, now) {
      const { since, until } = resendWindow(now)
      const found = await read(context, (session) =>
        collectionOf(context, IMPORT_REQUEST_IDS).findOne(
          inCompany(companyId, { id_key: idKey, received_at: { $gte: since, $lte: until } }),
          { ...inSession(session), projection: { _id: 1 } },
        ),
      )
      return found !== null
    },

    get: (companyId, id) => findOne<DataImport>(context, IMPORTS, byId(companyId, id)),

    list: (companyId, { status, target, limit }) =>
      read(context, async (session) => {
        // A limit of 0 means "no limit" to MongoDB.
        if (limit <= 0) return []
        const statuses = status === undefined ? undefined : typeof status === 'string' ? status : { $in: [...status] }
        const filter = { ...(statuses ? { status: statuses } : {}), ...(target ? { target } : {}) }
        const documents = await imports()
          .find(inCompany(companyId, filter), { ...inSession(session), sort: { _id: -1 }, limit })
          .toArray()
        return documents.map((document) => decode<DataImport>(IMPORTS, document))
      }),

    // An updateMany runs in a transaction (atomically), or it would be atomic per document only.
    closeWindows: (companyId, now) =>
      atomically(context, async (session) => {
        const result = await imports().updateMany(
          inCompany(companyId, { status: 'scheduled', window_ends_at: { $gt: now } }),
          { $set: { window_ends_at: now } },
          inSession(session),
        )
        return result.modifiedCount
      }),

    payloads: (companyId, importId) =>
      read(context, async (session) => {
        const documents = await collectionOf(context, IMPORT_PAYLOADS)
          .find(inCompany(companyId, { import_id: lookupId(importId) }), { ...inSession(session), sort: { position: 1, _id: 1 } })
          .toArray()
        const split = documents.filter((document) => partCount(document) > 1).map((document) => document._id)
        const parts =
          split.length === 0
            ? []
            : await collectionOf(context, IMPORT_PAYLOAD_PARTS)
                .find(inCompany(companyId, { payload_id: { $in: split } }), inSession(session))
                .toArray()
        return documents.map((document) =>
          payloadFrom(
            document,
            parts.filter((part) => String(part.payload_id) === String(document._id)),
          ),
        )
      }),

    async claimNext(owner, now, leaseExpiresAt, companyId, recent = []) {
      // The scan reads outside any transaction; each claim re-checks its candidate inside one. The companies
      // with an import running under a live lease are left out of the scan itself, so that however many
      // imports they have queued, the oldest runnable import of any other company is found. Companies take turns:
      // the first scan (in index order, stopping at the first import) leaves out the companies served lately
      // (`recent`); only when it finds none does a second one rank theirs by turn, the least recent first.
      const busy: unknown[] = await read(context, (session) =>
        imports().distinct('company_id', { status: 'started', lease_expires_at: live(now) }, inSession(session)),
      )
      const served = companyId ? [] : turnsOf(recent).map(lookupId)
      const tried: ObjectId[] = []
      for (;;) {
        const company = companyId ? { $eq: lookupId(companyId), $nin: busy } : { $nin: [...busy, ...served] }
        let candidate: Document | null = await read(context, (session) =>
          imports().findOne(
            { ...runnable(now), company_id: company, _id: { $nin: tried } },
            { ...inSession(session), sort: { _id: 1 }, projection: { _id: 1, company_id: 1 } },
          ),
        )
        if (!candidate && served.length > 0) {
          const [first] = await read(context, (session) =>
            imports()
              .aggregate(
                [
                  { $match: { ...runnable(now), company_id: { $in: served, $nin: busy }, _id: { $nin: tried } } },
                  // `$literal`: ids are values here, never field paths, whatever they start with.
                  { $project: { company_id: 1, turn: { $indexOfArray: [{ $literal: served }, '$company_id'] } } },
                  { $sort: { turn: 1, _id: 1 } },
                  { $limit: 1 },
                ],
                inSession(session),
              )
              .toArray(),
          )
          candidate = first ?? null
        }
        if (!candidate) return null
        await ensureLock(context, String(candidate.company_id), 'claim')
        const claimed = await claim(candidate, owner, now, leaseExpiresAt)
        if (claimed !== null && claimed !== 'busy') return claimed
        // Its company started another import since the scan ('busy'), or another worker took it (null).
        if (claimed === 'busy') busy.push(candidate.company_id)
        tried.push(candidate._id)
      }
    },

    renewLease: (companyId, id, owner, leaseExpiresAt) =>
      call(context, async (session) => {
        const result = await imports().updateOne(
          held(companyId, id, owner),
          { $set: { lease_expires_at: leaseExpiresAt } },
          inSession(session),
        )
        return result.matchedCount > 0
      }),

    hold: (companyId, id, owner) =>
      call(context, async (session) => {
        // A write that always changes the import (a no-op update would lock nothing): from here on the
        // transaction is the import's writer. `advance`, `finish` and `release` remove the counter in the same transaction.
        const result = await imports().updateOne(held(companyId, id, owner), { $inc: { holds: 1 } }, inSession(session))
        return result.matchedCount > 0
      }),

    release: (companyId, id, owner, { postponed = false } = {}) =>
      call(context, async (session) => {
        const result = await imports().updateOne(
          held(companyId, id, owner),
          // A hold in the same transaction (`hold`) ends with the claim.
          {
            $set: { status: 'scheduled', lease_owner: null, lease_expires_at: null },
            $unset: { holds: '' },
            ...(postponed ? { $inc: { busy_postponements: 1 } } : {}),
          },
          inSession(session),
        )
        return result.matchedCount > 0
      }),

    advance: (companyId, id, owner, progress: ImportProgress) =>
      call(context, async (session) => {
        const result = await imports().updateOne(
          held(companyId, id, owner),
          {
            $set: { payloads_applied: progress.payloads_applied, details: progress.details },
            $unset: { holds: '', busy_postponements: '' },
          },
          inSession(session),
        )
        return result.matchedCount > 0
      }),

    // Atomically: the finish mark and the deletion of the payloads, also outside a run's transaction (a failure of ours).
    finish: (companyId, id, owner, outcome: ImportOutcome) =>
      atomically(context, async (session) => {
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
            // The progress of a run in several transactions is over with it.
            $unset: { holds: '', payloads_applied: '' },
          },
          inSession(session),
        )
        if (result.matchedCount === 0) return false
        // A finished import is never run again: its calls' bodies go (its details stay), in the transaction that
        // finished it when there is one.
        await deletePayloadsOf(session, companyId, id)
        return true
      }),

    discard: (companyId, id, owner) =>
      atomically(context, async (session) => {
        const result = await imports().deleteOne(held(companyId, id, owner), inSession(session))
        if (result.deletedCount === 0) return false
        await deletePayloadsOf(session, companyId, id)
        await collectionOf(context, IMPORT_REQUEST_IDS).deleteMany(inCompany(companyId, { import_id: lookupId(id) }), inSession(session))
        return true
      }),

    async purgeFinished(finishedBefore, limit) {
      if (limit <= 0) return 0
      const expired = await read(context, (session) =>
        imports()
          .find(
            { status: 'finished', finished_at: { $lt: finishedBefore } },
            { ...inSession(session), projection: { _id: 1, company_id: 1 }, limit },
          )
          .toArray(),
      )
      if (expired.length === 0) return 0
      // Each by its whole shard key (company, id); one deleteMany, as a finished import no longer changes. Outside a
      // transaction, unlike most of the adapter's deleteManys (docs/decisions.md names the other two): no reader needs
      // the batch gone all at once (each import goes alone), an interrupted purge leaves imports the next one deletes,
      // and on a sharded cluster the companies of one batch span shards, which would make every purge a cross-shard
      // transaction.
      return call(context, async (session) => {
        const deleted = await imports().deleteMany(
          { $or: expired.map((document) => ({ company_id: document.company_id, _id: document._id })) },
          inSession(session),
        )
        return deleted.deletedCount
      })
    },

    async forgetRequestIds(receivedBefore, limit) {
      if (limit <= 0) return 0
      const remembered = collectionOf(context, IMPORT_REQUEST_IDS)
      const past = await read(context, (session) =>
        remembered
          .find({ received_at: { $lt: receivedBefore } }, { ...inSession(session), projection: { _id: 1, company_id: 1 }, limit })
          .toArray(),
      )
      if (past.length === 0) return 0
      // As purgeFinished's: each by its whole shard key, outside a transaction (a batch spans companies, and shards).
      // Its time checked again: a call sent since under the same id made it its own (the enqueue's upsert).
      return call(context, async (session) => {
        const deleted = await remembered.deleteMany(
          {
            received_at: { $lt: receivedBefore },
            $or: past.map((document) => ({ company_id: document.company_id, _id: document._id })),
          },
          inSession(session),
        )
        return deleted.deletedCount
      })
    },
  }
}
