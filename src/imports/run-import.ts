import type { Clock } from '../clock.ts'
import type { Company, DataImport, ImportDetail, ImportPayload } from '../store/model.ts'
import type { Store } from '../store/port.ts'
import { applyAttributions } from './attributions.ts'
import { type PayloadOutcome, refusedWhole } from './outcome.ts'
import { applyRecordCalls, type PreparedRecordCall, prepareRecordCalls, tableGone } from './records.ts'
import { applyUsers } from './users.ts'

/** Test seams of a run. Production passes none. */
export interface RunHooks {
  /** Called inside the run's transaction once every payload is applied, before the import is marked finished. */
  beforeFinish?(claimed: DataImport): Promise<void>
}

/** How a run of a claimed import ended. */
export type RunResult = { kind: 'finished'; import: DataImport } | { kind: 'lost' }

/** The claim was taken over by another worker (our lease expired): this run must leave no trace. */
class LostClaim extends Error {}

/**
 * Applies a claimed import: every joined payload, in arrival order, and the import's `finished` mark, in ONE
 * transaction. A crash before the commit leaves nothing applied (the import is run again once the lease
 * expires); after it, the import is finished. If another worker took the import over meanwhile, `finish`
 * refuses and the whole run is rolled back. Either way the payloads take effect exactly once.
 */
export async function runClaimedImport(store: Store, clock: Clock, claimed: DataImport, owner: string, hooks: RunHooks = {}): Promise<RunResult> {
  // The payloads of a claimed import no longer change (only a scheduled import is joined): they are read, and
  // records parsed, before the transaction, which then holds the store's write lock only to write.
  const payloads = await store.imports.payloads(claimed.company_id, claimed.id)
  const table = claimed.target === 'records' ? await store.dataTables.get(claimed.company_id, claimed.table_id ?? '') : null
  const recordCalls = table ? await prepareRecordCalls(table, payloads) : null
  try {
    return await store.transaction(async (tx) => {
      // First: from here on this transaction holds the import, so the worker's lease renewals wait for it.
      if (!(await tx.imports.hold(claimed.company_id, claimed.id, owner))) throw new LostClaim()
      const company = await tx.companies.get(claimed.company_id)
      // A deleted company takes its imports with it: there is nothing left to finish.
      if (!company) throw new LostClaim()
      const now = clock.now().toISOString()
      const outcomes = await applyPayloads(tx, company, claimed, payloads, recordCalls, now)
      await hooks.beforeFinish?.(claimed)
      const details = detailsOf(payloads, outcomes)
      const outcome = { finished_at: now, error: outcomes.some((item) => item !== null), details }
      if (!(await tx.imports.finish(company.id, claimed.id, owner, outcome))) throw new LostClaim()
      return { kind: 'finished' as const, import: { ...claimed, ...outcome, status: 'finished' as const, lease_owner: null, lease_expires_at: null } }
    }, { company: claimed.company_id })
  } catch (error) {
    if (error instanceof LostClaim) return { kind: 'lost' }
    throw error
  }
}

/**
 * Finishes an import whose run failed on a fault of ours (not on its data), so that it is not retried
 * forever: every call is reported refused, and nothing of it was applied (the failed run rolled back).
 */
export async function failClaimedImport(store: Store, clock: Clock, claimed: DataImport, owner: string, reference: string): Promise<boolean> {
  const payloads = await store.imports.payloads(claimed.company_id, claimed.id)
  const error = refusedWhole(`The import could not be applied because of an internal error (reference ${reference}); nothing of it was imported`)
  const details = detailsOf(payloads, payloads.map(() => error))
  return store.imports.finish(claimed.company_id, claimed.id, owner, { finished_at: clock.now().toISOString(), error: true, details })
}

async function applyPayloads(
  tx: Store,
  company: Company,
  claimed: DataImport,
  payloads: readonly ImportPayload[],
  recordCalls: readonly PreparedRecordCall[] | null,
  now: string,
): Promise<PayloadOutcome[]> {
  if (claimed.target === 'records') {
    if (!recordCalls) return payloads.map(tableGone)
    return applyRecordCalls(tx, company, claimed.table_id ?? '', recordCalls, now)
  }
  const outcomes: PayloadOutcome[] = []
  for (const payload of payloads) {
    // Each call stands alone: a refused one writes nothing, the others still apply.
    if (claimed.target === 'users') outcomes.push(await applyUsers(tx, company, payload.items, now))
    else outcomes.push(await applyAttributions(tx, company, claimed.target, payload.items))
  }
  return outcomes
}

function detailsOf(payloads: readonly ImportPayload[], outcomes: readonly PayloadOutcome[]): ImportDetail[] {
  return payloads.map((payload, index) => ({ payload_id: payload.id, number_of_records: payload.items.length, error: outcomes[index] }))
}
