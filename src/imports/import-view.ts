import { type Static, Type } from 'typebox'
import { NotFoundError } from '../errors.ts'
import { storedId } from '../domain/ids.ts'
import { OrNull } from '../domain/schemas.ts'
import { type DataImport, IMPORT_STATUSES } from '../store/model.ts'
import { ImportErrorSchema } from '../store/schemas.ts'
import type { Store } from '../store/port.ts'

const ImportStatusSchema = Type.Enum([...IMPORT_STATUSES])

/** One `data_tables_details` entry: one call joined to the import. */
const ImportDetailViewSchema = Type.Object({
  type: Type.Literal('api'),
  status: ImportStatusSchema,
  data_table_key: Type.String(),
  progress: Type.Integer({ minimum: 0, maximum: 100 }),
  number_of_records: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([ImportErrorSchema, Type.Null()]),
  ignored_keys: Type.Array(Type.String(), {
    description:
      'Record calls: keys of the records that the table does not know, ignored (the records were applied with their known fields); the first 100. Not an error',
  }),
})

/** The `data_import` object of `GET /v1/imports/{import_id}`. */
export const ImportViewSchema = Type.Object({
  id: Type.String(),
  created_at: Type.String(),
  launched_at: OrNull(Type.String()),
  finished_at: OrNull(Type.String()),
  status: ImportStatusSchema,
  progress: Type.Integer({ minimum: 0, maximum: 100 }),
  error: Type.Boolean(),
  data_tables_details: Type.Array(ImportDetailViewSchema, { description: 'One entry per call joined to the import, in arrival order' }),
})
export type ImportView = Static<typeof ImportViewSchema>

/** An import of the company as the v1 interface shows it; an unknown id, or another company's, is NotFoundError. */
export async function getImportView(store: Store, companyId: string, importId: string): Promise<ImportView> {
  const id = storedId(importId)
  const found = id ? await store.imports.get(companyId, id) : null
  if (!found) throw new NotFoundError('import', `No import ${importId}`)
  return importView(found)
}

/**
 * The view of an import. Progress is 0 until it is finished, then 100: an import too large for one transaction,
 * applied in steps (`runClaimedImport`), does not report them. A started import whose worker died shows `started`
 * until another worker runs it again.
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
