import { NotFoundError } from '../errors.ts'
import { isObjectId } from '../ids.ts'
import type { Quota, ReportingStructure, StructureType } from '../store/model.ts'
import type { Store } from '../store/port.ts'

/**
 * Finding what a v2 path names. v2 serves the live environment only: a sandbox id, an unknown id, a malformed
 * one and an id of another kind of structure all answer the same 404.
 */

/** Ids are stored in lower case; a client may send them in upper case. */
function storedId(id: string): string | null {
  const lower = id.toLowerCase()
  return isObjectId(lower) ? lower : null
}

/** The live reporting structure with this id, of the given type when one is named; null otherwise. */
export async function findLiveStructure(store: Store, companyId: string, id: string, type?: StructureType): Promise<ReportingStructure | null> {
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

export async function liveStructure(store: Store, companyId: string, id: string, type: StructureType): Promise<ReportingStructure> {
  const structure = await findLiveStructure(store, companyId, id, type)
  if (!structure) {
    const what = type === 'statement_reporting' ? 'statement reporting table' : 'record reporting table'
    throw new NotFoundError('table', `No ${what} with id ${id}`)
  }
  return structure
}

export async function liveQuota(store: Store, companyId: string, id: string): Promise<Quota> {
  const quota = await findLiveQuota(store, companyId, id)
  if (!quota) throw new NotFoundError('quota', `No quota with id ${id}`)
  return quota
}
