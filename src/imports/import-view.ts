import { NotFoundError } from '../errors.ts'
import { storedId } from '../domain/ids.ts'
import type { DataImport, ImportError, ImportStatus } from '../store/model.ts'
import type { Store } from '../store/port.ts'

/** One `data_tables_details` entry: one call joined to the import. */
export interface ImportDetailView {
  type: 'api'
  status: ImportStatus
  data_table_key: string
  progress: number
  number_of_records: number | null
  error: ImportError | null
  /** Record calls: the keys their records carried that the table does not know, ignored (not an error). */
  ignored_keys: string[]
}

/** The `data_import` object of `GET /v1/imports/{import_id}`. */
export interface ImportView {
  id: string
  created_at: string
  launched_at: string | null
  finished_at: string | null
  status: ImportStatus
  progress: number
  error: boolean
  data_tables_details: ImportDetailView[]
}

/** An import of the company as the v1 interface shows it; an unknown id, or another company's, is NotFoundError. */
export async function getImportView(store: Store, companyId: string, importId: string): Promise<ImportView> {
  const id = storedId(importId)
  const found = id ? await store.imports.get(companyId, id) : null
  if (!found) throw new NotFoundError('import', `No import ${importId}`)
  return importView(found)
}

/**
 * The view of an import. It is applied in one transaction, so progress is 0 until it is finished, then 100.
 * A started import whose worker died shows `started` until another worker runs it again.
 */
export function importView(data: DataImport): ImportView {
  const progress = data.status === 'finished' ? 100 : 0
  return {
    id: data.id,
    created_at: data.created_at,
    launched_at: data.launched_at,
    finished_at: data.finished_at,
    status: data.status,
    progress,
    error: data.error,
    data_tables_details: data.details.map((detail) => ({
      type: 'api',
      status: data.status,
      data_table_key: detail.data_table_key ?? data.data_table_key,
      progress,
      number_of_records: detail.number_of_records,
      error: detail.error,
      ignored_keys: detail.ignored_keys ?? [],
    })),
  }
}
