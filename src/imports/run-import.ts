import { CalculationChangeLog, type RecalculationSummary, recalculate } from '../calculation/recalculation.ts'
import type { Clock } from '../clock.ts'
import type { Company, DataImport, ImportDetail, ImportPayload } from '../store/model.ts'
import type { Store } from '../store/port.ts'
import { applyAttributions } from './attributions.ts'
import { type PayloadOutcome, refusedWhole } from './outcome.ts'
import { applyRecordCalls, type PreparedRecordCall, prepareRecordCalls } from './records.ts'
import { applyUsers } from './users.ts'

/** Test seams of a run. Production passes none. */
export interface RunHooks {
  /** Called inside the run's transaction once every payload is applied, before the import is marked finished. */
  beforeFinish?(claimed: DataImport): Promise<void>
}

/** How a run of a claimed import ended; a finished one says what its recalculation did. */
export type RunResult = { kind: 'finished'; import: DataImport; calculation: RecalculationSummary } | { kind: 'lost' }

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
  const recordCalls = claimed.target === 'records' ? await prepareRecordCalls(store, claimed, payloads) : []
  try {
    return await store.transaction(async (tx) => {
      const company = await tx.companies.get(claimed.company_id)
      // A deleted company takes its imports with it: there is nothing left to finish.
      if (!company) throw new LostClaim()
      const now = clock.now().toISOString()
      const changes = new CalculationChangeLog()
      const outcomes = await applyPayloads(tx, company, claimed, payloads, recordCalls, now, changes)
      // Plans' results commit with the payloads they come from, or not at all.
      const calculation = await recalculate(tx, company.id, changes, { now })
      await hooks.beforeFinish?.(claimed)
      const details = detailsOf(claimed, payloads, outcomes, recordCalls)
      const outcome = { finished_at: now, error: outcomes.some((item) => item.error !== null), details }
      if (!(await tx.imports.finish(company.id, claimed.id, owner, outcome))) throw new LostClaim()
      const finished = { ...claimed, ...outcome, status: 'finished' as const, lease_owner: null, lease_expires_at: null }
      return { kind: 'finished' as const, import: finished, calculation }
    })
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
  const failed = refusedWhole(`The import could not be applied because of an internal error (reference ${reference}); nothing of it was imported`)
  const details = detailsOf(claimed, payloads, payloads.map(() => failed))
  return store.imports.finish(claimed.company_id, claimed.id, owner, { finished_at: clock.now().toISOString(), error: true, details })
}

async function applyPayloads(
  tx: Store,
  company: Company,
  claimed: DataImport,
  payloads: readonly ImportPayload[],
  recordCalls: readonly PreparedRecordCall[],
  now: string,
  changes: CalculationChangeLog,
): Promise<PayloadOutcome[]> {
  if (claimed.target === 'records') return applyRecordCalls(tx, company, recordCalls, now, changes)
  const outcomes: PayloadOutcome[] = []
  for (const payload of payloads) {
    // Each call stands alone: a refused one writes nothing, the others still apply.
    if (claimed.target === 'users') outcomes.push(await applyUsers(tx, company, payload.items, now, changes))
    else outcomes.push(await applyAttributions(tx, company, claimed.target, payload.items))
  }
  return outcomes
}

/**
 * One detail per call, in arrival order, with the keys its records carried that their table ignored; a payload
 * stored before imports stacked takes its import's key.
 */
function detailsOf(
  claimed: DataImport,
  payloads: readonly ImportPayload[],
  outcomes: readonly PayloadOutcome[],
  recordCalls: readonly PreparedRecordCall[] = [],
): ImportDetail[] {
  const ignored = new Map(recordCalls.map((call) => [call.payload.id, [...call.ignoredKeys]]))
  return payloads.map((payload, index) => ({
    payload_id: payload.id,
    data_table_key: payload.data_table_key ?? claimed.data_table_key,
    number_of_records: outcomes[index].applied,
    error: outcomes[index].error,
    ignored_keys: ignored.get(payload.id) ?? [],
  }))
}
