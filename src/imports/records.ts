import { parseRecord } from '../domain/record-values.ts'
import { newId } from '../ids.ts'
import type { Company, DataTable, DataTableRecord, ImportItemIssue, ImportPayload } from '../store/model.ts'
import type { Store } from '../store/port.ts'
import { isObject, type PayloadOutcome, partial, refusedWhole } from './outcome.ts'

/** The last word on one record id within a call: its values to upsert, or a deletion. */
interface Change {
  values: Record<string, unknown>
  deleted: boolean
  /** The call deleted the record before sending it again: it starts afresh. */
  replaced: boolean
}

/** The outcome of a record call whose data table was deleted before its import ran. */
export const tableGone = () => refusedWhole('The data table no longer exists: nothing of this call was imported')

/** One record call, parsed: the last word on each record id it names, and the records it skipped. */
export interface PreparedRecordCall {
  payload: ImportPayload
  changes: Map<string, Change>
  skipped: ImportItemIssue[]
}

/** Records parsed between two yields to the event loop, so that HTTP requests of the same process go on. */
const PARSE_SLICE = 500

/**
 * Parses the record calls of an import by the table's field types. It needs no store, so a worker does it
 * before opening the transaction that writes, which then holds the store's write lock for less time; and it
 * yields to the event loop every few hundred records, so that a server running the worker keeps answering.
 */
export async function prepareRecordCalls(table: DataTable, payloads: readonly ImportPayload[]): Promise<PreparedRecordCall[]> {
  const calls: PreparedRecordCall[] = []
  for (const payload of payloads) {
    const call: PreparedRecordCall = { payload, changes: new Map(), skipped: [] }
    for (let index = 0; index < payload.items.length; index++) {
      if (index > 0 && index % PARSE_SLICE === 0) await new Promise((resolve) => setImmediate(resolve))
      readRecord(table, call, payload.items[index], index + 1)
    }
    calls.push(call)
  }
  return calls
}

/** Adds one item of a call to its changes, or to its skipped items. */
function readRecord(table: DataTable, { changes, skipped }: PreparedRecordCall, item: unknown, line_number: number): void {
  if (!isObject(item)) return void skipped.push({ line_number, row: item, details: 'expected a record object' })
  const parsed = parseRecord(table, item)
  if (parsed.problems.length > 0 || parsed.externalId === null) return void skipped.push({ line_number, row: item, details: parsed.problems.join('; ') })
  const previous = changes.get(parsed.externalId)
  if (parsed.deleted) changes.set(parsed.externalId, { values: {}, deleted: true, replaced: false })
  else if (previous && !previous.deleted) previous.values = { ...previous.values, ...parsed.values }
  else changes.set(parsed.externalId, { values: parsed.values, deleted: false, replaced: previous?.deleted ?? false })
}

/** What an import's `all=true` calls ask of its table: emptied once before the first call, keeping overrides or not. */
export interface Resync {
  empties: boolean
  /** A call asked `all=true` and `keep_overrides=true`: the overrides of the deleted records come back with them. */
  keepsOverrides: boolean
}

/** The resync the calls of one import ask for. */
export function resyncOf(calls: readonly PreparedRecordCall[]): Resync {
  return {
    empties: calls.some(({ payload }) => payload.options.all),
    keepsOverrides: calls.some(({ payload }) => payload.options.all && payload.options.keep_overrides),
  }
}

/** The resync of the calls after the first ones of an import, applied in a later transaction: none. */
export const NO_RESYNC: Resync = { empties: false, keepsOverrides: false }

/**
 * Applies the prepared record calls of one import, in arrival order. When one of them asked `all=true` the
 * table is emptied once, before the first (`resync`; a run in several transactions passes NO_RESYNC after the
 * first); manual overrides survive that when the same call also asked `keep_overrides=true`. Each parsed record
 * is upserted by its id field (a field left out keeps its value) or deleted (`deleted: true`); the skipped ones
 * are reported.
 */
export async function applyRecordCalls(
  tx: Store,
  company: Company,
  tableId: string,
  calls: readonly PreparedRecordCall[],
  now: string,
  resync: Resync = resyncOf(calls),
): Promise<PayloadOutcome[]> {
  const table = await tx.dataTables.get(company.id, tableId)
  if (!table) return calls.map(tableGone)

  let remembered = new Map<string, Record<string, unknown>>()
  if (resync.empties) {
    if (resync.keepsOverrides) {
      remembered = new Map((await tx.records.listOverridden(company.id, table.id)).map((record) => [record.external_id, record.overrides]))
    }
    await tx.records.deleteAll(company.id, table.id)
  }

  const outcomes: PayloadOutcome[] = []
  for (const call of calls) outcomes.push(await applyRecordCall(tx, table, call, remembered, now))
  return outcomes
}

async function applyRecordCall(
  tx: Store,
  table: DataTable,
  { payload, changes, skipped }: PreparedRecordCall,
  remembered: Map<string, Record<string, unknown>>,
  now: string,
): Promise<PayloadOutcome> {
  const stored = await tx.records.findByExternalIds(table.company_id, table.id, [...changes.keys()])
  const gone = [...changes].filter(([externalId, change]) => stored.has(externalId) && (change.deleted || change.replaced))
  if (gone.length > 0) await tx.records.deleteByExternalIds(table.company_id, table.id, gone.map(([externalId]) => externalId))

  const upserts: DataTableRecord[] = []
  for (const [externalId, change] of changes) {
    if (change.deleted) continue
    const existing = change.replaced ? undefined : stored.get(externalId)
    upserts.push(nextRecord(table, externalId, change.values, existing, remembered.get(externalId), payload.options.keep_overrides, now))
  }
  await tx.records.saveMany(table.company_id, upserts)
  return partial('record', payload.items.length, skipped)
}

/**
 * The record after an upsert. Imported values replace the stored ones field by field. A manual override is
 * dropped for the fields the import sets, unless the call keeps overrides.
 */
function nextRecord(
  table: DataTable,
  externalId: string,
  values: Record<string, unknown>,
  existing: DataTableRecord | undefined,
  rememberedOverrides: Record<string, unknown> | undefined,
  keepOverrides: boolean,
  now: string,
): DataTableRecord {
  let overrides = existing?.overrides ?? (keepOverrides ? (rememberedOverrides ?? {}) : {})
  if (!keepOverrides) overrides = Object.fromEntries(Object.entries(overrides).filter(([key]) => !Object.hasOwn(values, key)))
  return {
    id: existing?.id ?? newId(),
    company_id: table.company_id,
    table_id: table.id,
    external_id: externalId,
    values: { ...existing?.values, ...values },
    overrides,
    created_at: existing?.created_at ?? now,
    modified_at: now,
  }
}
