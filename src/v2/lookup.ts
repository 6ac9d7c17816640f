import { NotFoundError } from '../errors.ts'
import { findLiveQuota, findLiveStructure } from '../reporting/structures.ts'
import type { Quota, ReportingStructure, StructureType } from '../store/model.ts'
import type { Store } from '../store/port.ts'

/** The live structure a v2 rows path names; whatever finds nothing (a sandbox, unknown or malformed id…) is the same 404. */
export async function liveStructure(store: Store, companyId: string, id: string, type: StructureType): Promise<ReportingStructure> {
  const structure = await findLiveStructure(store, companyId, id, type)
  if (!structure) {
    const what = type === 'statement_reporting' ? 'statement reporting table' : 'record reporting table'
    throw new NotFoundError('table', `No ${what} with id ${id}`)
  }
  return structure
}

/** The live quota a v2 quota values path names; anything else is a 404. */
export async function liveQuota(store: Store, companyId: string, id: string): Promise<Quota> {
  const quota = await findLiveQuota(store, companyId, id)
  if (!quota) throw new NotFoundError('quota', `No quota with id ${id}`)
  return quota
}
