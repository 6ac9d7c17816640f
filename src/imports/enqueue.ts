import type { Clock } from '../clock.ts'
import { newId } from '../ids.ts'
import type { Company, DataImport, DataTable, ImportTarget } from '../store/model.ts'
import type { Store } from '../store/port.ts'

export interface ImportRequest {
  company: Company
  target: ImportTarget
  /** records: the (live) data table written. */
  table?: DataTable
  /** The call's items as sent. They are checked when the import runs, not now. */
  items: unknown[]
  /** Seconds the import waits for more calls to the same endpoint; 0 or absent: none. */
  debounceSeconds?: number
  all?: boolean
  keepOverrides?: boolean
}

/** The body of a 200 to an upsert call. */
export interface ImportReceipt {
  import_id: string
  objects_imported: number
}

/**
 * Records one upsert call: its payload is committed with the import it joins (the open import of the same
 * target, whose debounce window has not closed) or with a new one, before this resolves. The window is set
 * by the call that creates the import; joining calls neither extend nor shorten it. Record calls of every table
 * join one import (imports stack across tables, as the real service documents); each payload names its table.
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
  }
  const payload = {
    id: newId(),
    company_id: company.id,
    table_id: table?.id ?? null,
    data_table_key: table?.key ?? target,
    items: request.items,
    options: { all: request.all ?? false, keep_overrides: request.keepOverrides ?? false },
    received_at: nowText,
  }
  const joined = await store.imports.enqueue(fresh, payload, nowText)
  return { import_id: joined.id, objects_imported: request.items.length }
}
