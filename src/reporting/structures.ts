import { storedId } from '../domain/ids.ts'
import type { Quota, ReportingStructure, StructureType } from '../store/model.ts'
import type { Store } from '../store/port.ts'

/**
 * The company's reporting structures and quotas as v1, v2 and the admin find, count and link them. The public
 * interface serves the live environment only: a sandbox id, an unknown id, a malformed one and an id of another
 * kind of structure all find nothing.
 */

export type DataStructureType = StructureType | 'quota'

/** Where the v2 rows of a structure are read, relative to the service's base URL (v1's deprecated reads link there too). */
export function rowsPath(type: DataStructureType, id: string): string {
  if (type === 'quota') return `/v2/quotas/${id}/values`
  return `/v2/reporting/${id}/${type === 'statement_reporting' ? 'statements' : 'records'}`
}

/** How many rows a reporting structure shows: its environment's statements, or its data table's commission lines. */
export function structureRowCount(store: Store, structure: ReportingStructure): Promise<number> {
  return structure.type === 'statement_reporting'
    ? store.statements.count(structure.company_id, structure.environment)
    : store.commissionLines.count(structure.company_id, structure.data_table_id ?? '')
}

/** The live reporting structure with this id (in any letter case), of the given type when one is named; null otherwise. */
export async function findLiveStructure(
  store: Store,
  companyId: string,
  id: string,
  type?: StructureType,
): Promise<ReportingStructure | null> {
  const key = storedId(id)
  if (!key) return null
  const structure = await store.structures.get(companyId, key)
  if (!structure || structure.environment !== 'live' || (type && structure.type !== type)) return null
  return structure
}

/** The live quota with this id (archived ones included); null otherwise. */
export async function findLiveQuota(store: Store, companyId: string, id: string): Promise<Quota | null> {
  const key = storedId(id)
  if (!key) return null
  const quota = await store.quotas.get(companyId, key)
  return quota && quota.environment === 'live' ? quota : null
}
