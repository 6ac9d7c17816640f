import { type Static, Type } from 'typebox'
import { setImmediate } from 'node:timers/promises'
import type { Clock } from '../clock.ts'
import { QueueFullError } from '../errors.ts'
import { newId } from '../ids.ts'
import {
  type Company,
  type DataImport,
  type DataTable,
  type ImportPayload,
  type ImportTarget,
  latestImportDeadline,
  type ResendKeys,
} from '../store/model.ts'
import { ImportQueueFullError, type Store } from '../store/port.ts'
import { MAX_QUEUE_RETRY_AFTER_SECONDS, QUEUE_DRAIN_BYTES_PER_SECOND } from './limits.ts'

export interface ImportRequest {
  company: Company
  target: ImportTarget
  /** records: the (live) data table written. */
  table?: DataTable
  /** The call's items as sent. They are checked when the import runs, not now. */
  items: unknown[]
  /** The size of the call's request body, in bytes: what it counts against the company's import queue. */
  bytes: number
  /** The most bytes the company may have queued (`IMPORT_QUEUE_LIMIT_MB`); past it the call is refused. */
  queueLimitBytes: number
  /** Seconds the import waits for more calls to the same endpoint; 0 or absent: none. */
  debounceSeconds?: number
  all?: boolean
  keepOverrides?: boolean
  /** Names a call that may come again as it is (`ImportPayload.resend`): then it is not stored twice. */
  resend?: ResendKeys
}

/** The body of a 200 to an upsert call. */
export const ImportReceiptSchema = Type.Object({
  import_id: Type.String({ description: 'Poll GET /v1/imports/{import_id} until its status is finished' }),
  objects_imported: Type.Integer({ description: 'How many items the call carried' }),
})
export type ImportReceipt = Static<typeof ImportReceiptSchema>

/**
 * Records one upsert call: its payload is committed with the import it joins (the open import of the same
 * target, whose debounce window has not closed) or with a new one, before this resolves. The window is set
 * by the call that creates the import; joining calls neither extend nor shorten it. Record calls of every table
 * join one import (imports stack across tables, as the real service documents); each payload names its table.
 * A call that would take the company's queued bytes over `queueLimitBytes` is refused with QueueFullError and
 * nothing is stored.
 */
export async function enqueueImport(store: Store, clock: Clock, request: ImportRequest): Promise<ImportReceipt> {
  const now = clock.now()
  const nowText = now.toISOString()
  const { company, target, table } = request
  const fresh: DataImport = {
    id: newId(),
    company_id: company.id,
    target,
    table_id: null,
    data_table_key: target,
    join_key: target,
    status: 'scheduled',
    window_ends_at: new Date(now.getTime() + (request.debounceSeconds ?? 0) * 1000).toISOString(),
    created_at: nowText,
    launched_at: null,
    finished_at: null,
    error: false,
    details: [],
    lease_owner: null,
    lease_expires_at: null,
    attempts: 0,
    payload_bytes: 0,
  }
  const payload: Omit<ImportPayload, 'import_id'> = {
    id: newId(),
    company_id: company.id,
    table_id: table?.id ?? null,
    data_table_key: table?.key ?? target,
    items: request.items,
    options: { all: request.all ?? false, keep_overrides: request.keepOverrides ?? false },
    received_at: nowText,
    bytes: request.bytes,
    ...(request.resend === undefined ? {} : { resend: request.resend }),
  }
  try {
    // The body was parsed in this turn of the event loop; storing it waits for the next, so that a large call
    // never holds the requests that came meanwhile for both.
    await setImmediate()
    const joined = await store.imports.enqueue(fresh, payload, nowText, request.queueLimitBytes)
    return { import_id: joined.id, objects_imported: request.items.length }
  } catch (error) {
    if (error instanceof ImportQueueFullError)
      throw await queueFull(store, company.id, now, error.queuedBytes, request.bytes, request.queueLimitBytes)
    throw error
  }
}

/**
 * Refuses a call of `bytes` with QueueFullError when the company's queue is full already, as `enqueueImport`
 * would: a cheap check before the call's body is read. Passes when it may fit (the enqueue decides).
 */
export async function checkImportQueue(
  store: Store,
  clock: Clock,
  companyId: string,
  bytes: number,
  queueLimitBytes: number,
): Promise<void> {
  const queued = await store.imports.queuedBytes(companyId)
  if (queued > 0 && queued + bytes > queueLimitBytes) throw await queueFull(store, companyId, clock.now(), queued, bytes, queueLimitBytes)
}

const megabytes = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`

/**
 * The refusal of a call of `bytes`: retry once the queue has had time to drain what is over the limit. An import
 * whose debounce window is open cannot run before it closes, so the wait counts from the last such window's end;
 * the message says so, since the calls of one window (a resync split over several) must fit in the bound together.
 */
async function queueFull(
  store: Store,
  companyId: string,
  now: Date,
  queued: number,
  bytes: number,
  limit: number,
): Promise<QueueFullError> {
  const excess = queued + bytes - limit
  const draining = Math.min(MAX_QUEUE_RETRY_AFTER_SECONDS, Math.max(1, Math.ceil(excess / QUEUE_DRAIN_BYTES_PER_SECOND)))
  const windowEnd = await lastOpenWindowEnd(store, companyId, now)
  const windowSeconds = windowEnd === null ? 0 : Math.ceil((windowEnd.getTime() - now.getTime()) / 1000)
  const seconds = windowSeconds + draining
  const window =
    windowEnd === null
      ? ''
      : ` Its debounce window closes at ${windowEnd.toISOString()}: nothing of it runs before, so the calls of one window must fit in the limit together.`
  return new QueueFullError(
    `The company's imports waiting to run hold ${megabytes(queued)}; this call's ${megabytes(bytes)} would go over the limit of ${megabytes(limit)}.${window} Nothing was stored: send it again after ${seconds} s`,
    seconds,
  )
}

/** The kinds of call that take `debounce`, and so may hold a window open. */
const DEBOUNCED_TARGETS: readonly ImportTarget[] = ['users', 'records']

/**
 * When the last debounce window still open among the company's scheduled imports closes; null when none is open.
 * Read kind by kind: every call of a kind joins its open window, so that window's import is among the newest of its
 * kind, where the company's newest imports of every kind may be hundreds of calls made without a debounce.
 */
async function lastOpenWindowEnd(store: Store, companyId: string, now: Date): Promise<Date | null> {
  const scheduled = await Promise.all(
    DEBOUNCED_TARGETS.map((target) => store.imports.list(companyId, { status: 'scheduled', target, limit: 100 })),
  )
  const latest = Date.parse(latestImportDeadline(now.toISOString()))
  const ends = scheduled
    .flat()
    .map((waiting) => Date.parse(waiting.window_ends_at))
    .filter((end) => end > now.getTime() && end <= latest)
  return ends.length === 0 ? null : new Date(Math.max(...ends))
}
