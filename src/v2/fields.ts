import { NotFoundError } from '../errors.ts'
import { findLiveQuota, findLiveStructure } from '../reporting/structures.ts'
import type { CustomMetric, DataTableField, ReportingStructure } from '../store/model.ts'
import type { Store } from '../store/port.ts'
import { type FieldSchema, fieldSchema, quotaFields, recordFields, shownFields, shownMetrics, statementFields } from './field-schema.ts'

/** What a reporting structure shows beyond its standard fields, as currently configured. */
export interface StructureColumns {
  metrics: CustomMetric[]
  /** record_reporting only. */
  fields: DataTableField[]
}

export async function structureColumns(store: Store, structure: ReportingStructure): Promise<StructureColumns> {
  const companyId = structure.company_id
  const [metrics, table] = await Promise.all([
    structure.metric_keys.length > 0 ? store.metrics.list(companyId) : Promise.resolve([]),
    structure.type === 'record_reporting' && structure.data_table_id
      ? store.dataTables.get(companyId, structure.data_table_id)
      : Promise.resolve(null),
  ])
  return { metrics: shownMetrics(structure, metrics), fields: structure.type === 'record_reporting' ? shownFields(structure, table) : [] }
}

/** The field schema of a live reporting structure or quota: `GET /v2/data-structures/{table_id}/fields`. */
export async function fieldSchemaOf(store: Store, companyId: string, id: string): Promise<FieldSchema> {
  const structure = await findLiveStructure(store, companyId, id)
  if (structure) {
    const columns = await structureColumns(store, structure)
    if (structure.type === 'statement_reporting') {
      return fieldSchema(statementFields(columns.metrics, await store.statements.currenciesInUse(companyId, 'live')))
    }
    const currencies = structure.data_table_id
      ? await store.commissionLines.currenciesInUse(companyId, structure.data_table_id)
      : { rows: [], metrics: new Map(), recordValues: new Map() }
    return fieldSchema(recordFields(columns.fields, columns.metrics, currencies))
  }
  const quota = await findLiveQuota(store, companyId, id)
  if (quota) return fieldSchema(quotaFields(quota), quota.type)
  throw new NotFoundError('data_structure', `No data structure with id ${id}`)
}
