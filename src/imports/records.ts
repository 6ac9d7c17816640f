import { MAX_RECORD_TEXT_CHARS, parseRecord, RECORD_TOO_LONG, textLength } from '../domain/record-values.ts'
import { AscendingIds } from '../ids.ts'
import type { Company, DataImport, DataTable, DataTableRecord, ImportItemIssue, ImportPayload } from '../store/model.ts'
import type { CalculationChangeLog } from '../calculation/recalculation.ts'
import type { Store } from '../store/port.ts'
import { isObject, type PayloadOutcome, partial, refused, refusedWhole } from './outcome.ts'

/** The last word on one record id within a call: its values to upsert, or a deletion. */
interface Change {
  values: Record<string, unknown>
  deleted: boolean
  /** The call deleted the record before sending it again: it starts afresh. */
  replaced: boolean
}

/** The outcome of a record call whose data table was deleted before its import ran. */
const tableGoneOutcome = () => refusedWhole('The data table no longer exists: nothing of this call was imported')

/** One record call, parsed: its table, the last word on each record id it names, and the records it skipped. */
export interface PreparedRecordCall {
  payload: ImportPayload
  /** The id of the table the call writes. */
  tableId: string
  /** Nothing to apply: the table no longer exists. */
  tableGone: boolean
  changes: Map<string, Change>
  skipped: ImportItemIssue[]
  /** Keys of its records that the table does not know: ignored, and named once on the call's detail. */
  ignoredKeys: Set<string>
}

/** How many ignored keys a call's detail names: a bound on the import record, whatever a CSV export holds. */
export const KEPT_IGNORED_KEYS = 100

/** The table a record call writes: its own, or (a payload stored before imports stacked) its import's. */
function tableIdOf(claimed: DataImport, payload: ImportPayload): string {
  return payload.table_id ?? claimed.table_id ?? ''
}

/** Records parsed between two yields to the event loop, so that HTTP requests of the same process go on. */
const PARSE_SLICE = 500

/**
 * Parses the record calls of an import, each by the field types of its own table (an import stacks calls to
 * several tables). It reads only the tables, so a worker does it before opening the transaction that writes,
 * which then holds the store's write lock for less time; and it yields to the event loop every few hundred
 * records, so that a server running the worker keeps answering.
 */
export async function prepareRecordCalls(
  store: Store,
  claimed: DataImport,
  payloads: readonly ImportPayload[],
): Promise<PreparedRecordCall[]> {
  const tables = new Map<string, DataTable | null>()
  const calls: PreparedRecordCall[] = []
  for (const payload of payloads) {
    const tableId = tableIdOf(claimed, payload)
    if (!tables.has(tableId)) tables.set(tableId, await store.dataTables.get(claimed.company_id, tableId))
    const table = tables.get(tableId) ?? null
    const call: PreparedRecordCall = {
      payload,
      tableId,
      tableGone: table === null,
      changes: new Map(),
      skipped: [],
      ignoredKeys: new Set(),
    }
    calls.push(call)
    if (!table) continue
    for (let index = 0; index < payload.items.length; index++) {
      if (index > 0 && index % PARSE_SLICE === 0) await new Promise((resolve) => setImmediate(resolve))
      readRecord(table, call, payload.items[index], index + 1)
    }
  }
  return calls
}

/**
 * Adds one item of a call to its changes, or to its skipped items. Keys the table does not know are ignored, as
 * the real service does (a CRM export with an extra column still imports), and collected for the detail.
 */
function readRecord(table: DataTable, { changes, skipped, ignoredKeys }: PreparedRecordCall, item: unknown, line_number: number): void {
  if (!isObject(item)) return void skipped.push({ line_number, row: item, details: 'expected a record object' })
  const parsed = parseRecord(table, item)
  for (const key of parsed.unknownKeys) if (ignoredKeys.size < KEPT_IGNORED_KEYS) ignoredKeys.add(key)
  if (parsed.problems.length > 0 || parsed.externalId === null)
    return void skipped.push({ line_number, row: item, details: parsed.problems.join('; ') })
  const previous = changes.get(parsed.externalId)
  if (parsed.deleted) changes.set(parsed.externalId, { values: {}, deleted: true, replaced: false })
  else if (previous && !previous.deleted) {
    // Each item is bounded; the record the call's items for it make together is too, before anything is applied
    // (an `all=true` call whose records are all refused must empty nothing).
    const merged = { ...previous.values, ...parsed.values }
    if (textLength(merged) > MAX_RECORD_TEXT_CHARS) return void skipped.push({ line_number, row: item, details: RECORD_TOO_LONG })
    previous.values = merged
  } else changes.set(parsed.externalId, { values: parsed.values, deleted: false, replaced: previous?.deleted ?? false })
}

/**
 * What an import's `all=true` calls ask: the tables emptied once, before the first call (see `emptiesTable`), and
 * for each whether a call also asked `keep_overrides=true` (the overrides of the deleted records then come back
 * with the records sent again).
 */
export type Resync = ReadonlyMap<string, { keepsOverrides: boolean }>

/** The resync the record calls of one import ask for, over all of them. */
export function resyncOf(calls: readonly PreparedRecordCall[]): Resync {
  const resync = new Map<string, { keepsOverrides: boolean }>()
  for (const [tableId, tableCalls] of Map.groupBy(calls, (call) => call.tableId)) {
    if (tableCalls.some((call) => call.tableGone) || !emptiesTable(tableCalls)) continue
    resync.set(tableId, { keepsOverrides: tableCalls.some(({ payload }) => payload.options.all && payload.options.keep_overrides) })
  }
  return resync
}

/** The resync of the calls after the first ones of an import, applied in a later transaction: none. */
export const NO_RESYNC: Resync = new Map()

/**
 * Applies the prepared record calls of one import: first empties the tables `resync` names (all those the
 * import's calls empty, when they are applied in one transaction; in a run of several, the first transaction's
 * and then NO_RESYNC), then the calls, table by table, each table's calls in arrival order; returns the outcome
 * of each call, in the order given. Calls to different tables do not touch each other. What changed goes to
 * `changes`, for the plans' recalculation.
 */
export async function applyRecordCalls(
  tx: Store,
  company: Company,
  calls: readonly PreparedRecordCall[],
  now: string,
  changes: CalculationChangeLog,
  resync: Resync,
): Promise<PayloadOutcome[]> {
  const remembered = await emptyTables(tx, company, resync, calls, changes)
  const outcomes = new Map<PreparedRecordCall, PayloadOutcome>()
  for (const [tableId, tableCalls] of Map.groupBy(calls, (call) => call.tableId)) {
    const table = tableCalls.some((call) => call.tableGone) ? null : await tx.dataTables.get(company.id, tableId)
    const tableOutcomes = table
      ? await applyTableCalls(tx, table, tableCalls, remembered.get(tableId) ?? new Map(), now, changes)
      : tableCalls.map(tableGoneOutcome)
    tableCalls.forEach((call, index) => outcomes.set(call, tableOutcomes[index]))
  }
  return calls.map((call) => outcomes.get(call)!)
}

/**
 * Empties the tables of a resync, and answers, by table and external id, the deleted records that its calls send
 * again, as they were: a record that comes back keeps its id and creation time, so that its commission lines keep
 * theirs and an unchanged resync changes no row an incremental sync reads; and with `keep_overrides` its overrides.
 */
async function emptyTables(
  tx: Store,
  company: Company,
  resync: Resync,
  calls: readonly PreparedRecordCall[],
  changes: CalculationChangeLog,
): Promise<Map<string, Map<string, DataTableRecord>>> {
  const remembered = new Map<string, Map<string, DataTableRecord>>()
  for (const tableId of resync.keys()) {
    const resent = calls.filter((call) => call.tableId === tableId).flatMap((call) => [...call.changes.keys()])
    remembered.set(tableId, await tx.records.findByExternalIds(company.id, tableId, resent))
    await tx.records.deleteAll(company.id, tableId)
    changes.tableRewritten(tableId)
  }
  return remembered
}

/**
 * Applies the calls of one import to one table, in arrival order, the table emptied already when they asked it
 * (`remembered`: the deleted records its calls send again, as they were). Each parsed record is
 * upserted by its id field (a field left out keeps its value) or deleted (`deleted: true`); the skipped ones are
 * reported.
 */
async function applyTableCalls(
  tx: Store,
  table: DataTable,
  calls: readonly PreparedRecordCall[],
  remembered: Map<string, DataTableRecord>,
  now: string,
  changes: CalculationChangeLog,
): Promise<PayloadOutcome[]> {
  const outcomes: PayloadOutcome[] = []
  for (const call of calls) outcomes.push(await applyRecordCall(tx, table, call, remembered, now, changes))
  return outcomes
}

/**
 * Whether the calls of one import to one table empty it first: one asked `all=true`, and the resync brings
 * something, a record to apply (of any of the calls: a resync may be split over several) or an explicit empty
 * list with `all=true`. When every record of them was refused, nothing is deleted: a broken export must not
 * leave the table empty by mistake.
 */
function emptiesTable(calls: readonly PreparedRecordCall[]): boolean {
  if (!calls.some(({ payload }) => payload.options.all)) return false
  return calls.some(({ changes, payload }) => changes.size > 0 || (payload.options.all && payload.items.length === 0))
}

/** Applies one call's records; a call whose every record was refused is refused (nothing of it was applied). */
async function applyRecordCall(
  tx: Store,
  table: DataTable,
  { payload, changes, skipped }: PreparedRecordCall,
  remembered: Map<string, DataTableRecord>,
  now: string,
  log: CalculationChangeLog,
): Promise<PayloadOutcome> {
  if (changes.size === 0 && skipped.length > 0) return refused('record', skipped)
  const stored = await tx.records.findByExternalIds(table.company_id, table.id, [...changes.keys()])
  const gone = [...changes].filter(([externalId, change]) => stored.has(externalId) && (change.deleted || change.replaced))
  if (gone.length > 0)
    await tx.records.deleteByExternalIds(
      table.company_id,
      table.id,
      gone.map(([externalId]) => externalId),
    )
  for (const [externalId] of gone) {
    const before = stored.get(externalId)
    if (before) log.recordChanged(table.id, before.id, null, before)
  }

  const upserts: DataTableRecord[] = []
  const made = {
    now,
    keepOverrides: payload.options.keep_overrides,
    ids: new AscendingIds(await tx.records.lastId(table.company_id, table.id)),
  }
  for (const [externalId, change] of changes) {
    if (change.deleted) continue
    const existing = change.replaced ? undefined : stored.get(externalId)
    upserts.push(nextRecord(table, externalId, change.values, existing, remembered.get(externalId), made))
  }
  await tx.records.saveMany(table.company_id, upserts)
  for (const record of upserts) {
    // A record replaced (deleted, then sent again) is a new one: the stored one is logged as deleted above.
    const before = stored.get(record.external_id)
    log.recordChanged(table.id, record.id, record, before?.id === record.id ? before : null)
  }
  return partial('record', payload.items.length, skipped)
}

/**
 * The record after an upsert. Imported values replace the stored ones field by field. A manual override is
 * dropped for the fields the import sets, unless the call keeps overrides. A record that a resync deleted and sends
 * again (`resent`) starts from nothing but keeps its id and creation time, and with `keepOverrides` its overrides.
 * A new record takes the next of the table's ascending ids.
 */
function nextRecord(
  table: DataTable,
  externalId: string,
  values: Record<string, unknown>,
  existing: DataTableRecord | undefined,
  resent: DataTableRecord | undefined,
  { now, keepOverrides, ids }: { now: string; keepOverrides: boolean; ids: AscendingIds },
): DataTableRecord {
  let overrides = existing?.overrides ?? (keepOverrides ? (resent?.overrides ?? {}) : {})
  if (!keepOverrides) overrides = Object.fromEntries(Object.entries(overrides).filter(([key]) => !Object.hasOwn(values, key)))
  const identity = existing ?? resent
  return {
    id: identity?.id ?? ids.next(),
    company_id: table.company_id,
    table_id: table.id,
    external_id: externalId,
    values: { ...existing?.values, ...values },
    overrides,
    created_at: identity?.created_at ?? now,
    modified_at: now,
  }
}
