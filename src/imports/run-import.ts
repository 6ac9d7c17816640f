import {
  CalculationChangeLog,
  KEPT_PROBLEMS,
  noCalculation,
  type RecalculationSummary,
  recalculate,
  stampedBy,
} from '../calculation/recalculation.ts'
import type { Clock } from '../clock.ts'
import type { Company, DataImport, ImportDetail, ImportPayload } from '../store/model.ts'
import type { Store } from '../store/port.ts'
import { applyAttributions } from './attributions.ts'
import { boundedDetails, type PayloadOutcome, refusedWhole } from './outcome.ts'
import { applyRecordCalls, NO_RESYNC, type PreparedRecordCall, prepareRecordCalls, type Resync, resyncOf } from './records.ts'
import { applyUsers } from './users.ts'

/**
 * How a run of a claimed import ended: finished (with what its recalculation did), lost to another worker,
 * handed back to `scheduled` because its worker stops, or discarded (deleted unapplied) because its company is gone.
 */
export type RunResult =
  | { kind: 'finished'; import: DataImport; calculation: RecalculationSummary }
  | { kind: 'lost' }
  | { kind: 'handed back' }
  | { kind: 'discarded' }

/** The claim was taken over by another worker (our lease expired), or the import removed (a reset): this run must leave no trace. */
class LostClaim extends Error {}

/** What a step's transaction answers when the import's company was deleted: the import was deleted unapplied. */
const COMPANY_GONE = Symbol('company gone')

/** The worker stops: the run goes no further than the transactions it committed. */
class Stopping extends Error {}

/** The calls `start` to `end` (exclusive, in payload order) of an import, applied in one transaction. */
interface Step {
  start: number
  end: number
}

/**
 * Applies a claimed import: every joined payload, in payload order, and the import's `finished` mark. An import
 * within what one transaction of the store takes (`Store.itemsPerTransaction`: always, on SQLite) is applied in
 * ONE transaction: a crash before the commit leaves nothing applied (the import is run again once the lease
 * expires); after it, the import is finished. A larger one is applied in steps of whole calls, one transaction
 * each, which records how far the run got with the calls it applied (`imports.advance`); the last one marks it
 * finished, and a run that starts again goes on after the last step committed. Every transaction first holds
 * the import (`imports.hold`): if another worker took it over meanwhile, it is rolled back and the run stops.
 * Either way each call takes effect exactly once.
 *
 * Once `stopping` is aborted (the worker stops), the run starts no further transaction: it hands the import back
 * (`imports.release`), so that another worker takes it at once and goes on after the last step committed. A
 * transaction already under way is let finish.
 */
export async function runClaimedImport(
  store: Store,
  clock: Clock,
  claimed: DataImport,
  owner: string,
  stopping?: AbortSignal,
): Promise<RunResult> {
  // The payloads of a claimed import no longer change (only a scheduled import is joined): they are read, and
  // records parsed, before the transactions, which then hold the store's write lock only to write.
  const payloads = await store.imports.payloads(claimed.company_id, claimed.id)
  const recordCalls = claimed.target === 'records' ? await prepareRecordCalls(store, claimed, payloads) : []
  const resync = resyncOf(recordCalls)
  const done = claimed.payloads_applied ?? 0
  // The overrides an `all=true` call keeps are remembered by the transaction that empties the table, for the
  // calls that send their records again: those calls must be applied by the same transaction.
  const keepsOverrides = [...resync.values()].some((table) => table.keepsOverrides)
  const steps = stepsOf(payloads, done, keepsOverrides ? Number.POSITIVE_INFINITY : store.itemsPerTransaction)
  try {
    if (done === 0) for (const tableId of resync.keys()) await emptyLargeTable(store, claimed, owner, tableId, stopping)
    let details = claimed.details.slice(0, done)
    let calculation = noCalculation()
    for (const [index, step] of steps.entries()) {
      if (stopping?.aborted) throw new Stopping()
      const last = index === steps.length - 1
      const ran = await store.transaction(
        async (tx) => {
          // First: from here on this transaction holds the import, so the worker's lease renewals wait for it.
          if (!(await tx.imports.hold(claimed.company_id, claimed.id, owner))) throw new LostClaim()
          const company = await tx.companies.get(claimed.company_id)
          if (!company) {
            // A deletion takes the company's imports with it, but a call stored while it ran (authenticated just
            // before) may have left one, or the deletion (in parts, on MongoDB) has not reached its imports yet.
            // The import goes unapplied, with its payloads, in this transaction: no later deletion of the company
            // would come to remove it. Nothing else is deleted here: what the deletion has still to remove may be
            // far more than a transaction holds.
            if (!(await tx.imports.discard(claimed.company_id, claimed.id, owner))) throw new LostClaim()
            return COMPANY_GONE
          }
          // The time once the transaction holds the store, a move of the clock by another process meanwhile included.
          const timing = await stampedBy(clock, tx)
          const { now } = timing
          const stepPayloads = payloads.slice(step.start, step.end)
          const stepCalls = recordCalls.slice(step.start, step.end)
          const changes = new CalculationChangeLog()
          const outcomes = await applyPayloads(
            tx,
            company,
            claimed,
            stepPayloads,
            stepCalls,
            now,
            changes,
            step.start === 0 ? resync : NO_RESYNC,
          )
          // Plans' results commit with the payloads they come from, or not at all. They are stamped as each plan's are
          // written, once the payloads are applied: an incremental v2 sync reads a row once it is committed, and the
          // closer its stamp to that commit, the smaller the margin a sync's mark needs (docs/decisions.md, "The
          // high-water mark").
          const stepCalculation = await recalculate(tx, company.id, changes, timing)
          const applied = boundedDetails([...details, ...detailsOf(claimed, stepPayloads, outcomes, stepCalls)])
          if (!last) {
            if (!(await tx.imports.advance(company.id, claimed.id, owner, { payloads_applied: step.end, details: applied })))
              throw new LostClaim()
            return { applied, stepCalculation, finished: null }
          }
          const outcome = { finished_at: now, error: applied.some((detail) => detail.error !== null), details: applied }
          if (!(await tx.imports.finish(company.id, claimed.id, owner, outcome))) throw new LostClaim()
          const { payloads_applied: _progress, ...before } = claimed
          const finished: DataImport = { ...before, ...outcome, status: 'finished', lease_owner: null, lease_expires_at: null }
          return { applied, stepCalculation, finished }
        },
        { company: claimed.company_id },
      )
      if (ran === COMPANY_GONE) return { kind: 'discarded' }
      details = ran.applied
      calculation = addedCalculation(calculation, ran.stepCalculation)
      if (ran.finished) return { kind: 'finished', import: ran.finished, calculation }
    }
    throw new Error('an import run ended without its last step')
  } catch (error) {
    if (error instanceof LostClaim) return { kind: 'lost' }
    if (error instanceof Stopping)
      return (await store.imports.release(claimed.company_id, claimed.id, owner)) ? { kind: 'handed back' } : { kind: 'lost' }
    throw error
  }
}

/**
 * The transactions of a run: the calls from `done` on, grouped in order, each group of at most `budget` items
 * unless one call alone holds more. Within the budget (always, with an infinite one), one step.
 */
function stepsOf(payloads: readonly ImportPayload[], done: number, budget: number): Step[] {
  const steps: Step[] = []
  let start = done
  let items = 0
  for (let index = done; index < payloads.length; index++) {
    const size = payloads[index].items.length
    if (index > start && items + size > budget) {
      steps.push({ start, end: index })
      start = index
      items = 0
    }
    items += size
  }
  steps.push({ start, end: payloads.length })
  return steps
}

/** What the recalculations of a run's steps did together. */
function addedCalculation(total: RecalculationSummary, step: RecalculationSummary): RecalculationSummary {
  return {
    cells: total.cells + step.cells,
    statements_written: total.statements_written + step.statements_written,
    statements_deleted: total.statements_deleted + step.statements_deleted,
    lines_written: total.lines_written + step.lines_written,
    lines_deleted: total.lines_deleted + step.lines_deleted,
    problems: [...total.problems, ...step.problems].slice(0, KEPT_PROBLEMS),
  }
}

/**
 * Empties, ahead of the run's first transaction, a table that holds more records than one transaction should
 * delete: batch by batch, each in a transaction that holds the import. Records with manual overrides stay for
 * the first transaction, which remembers their overrides when a call keeps them and deletes the rest. A run
 * that starts again before its first step committed empties what is left (no other import of the company
 * runs meanwhile, so the table holds nothing new); once a step committed, the table is not emptied again.
 */
async function emptyLargeTable(
  store: Store,
  claimed: DataImport,
  owner: string,
  tableId: string,
  stopping: AbortSignal | undefined,
): Promise<void> {
  const batch = store.itemsPerTransaction
  if ((await store.records.count(claimed.company_id, tableId)) <= batch) return
  for (;;) {
    if (stopping?.aborted) throw new Stopping()
    const deleted = await store.transaction(
      async (tx) => {
        if (!(await tx.imports.hold(claimed.company_id, claimed.id, owner))) throw new LostClaim()
        const count = await tx.records.deleteUnoverridden(claimed.company_id, tableId, batch)
        // Still nothing applied: this only ends the hold, in the same transaction.
        if (!(await tx.imports.advance(claimed.company_id, claimed.id, owner, { payloads_applied: 0, details: claimed.details })))
          throw new LostClaim()
        return count
      },
      { company: claimed.company_id },
    )
    if (deleted < batch) return
  }
}

/**
 * Finishes an import whose run failed on a fault of ours (not on its data), so that it is not retried
 * forever: every call not applied yet is reported refused (the failed transaction rolled back), and the calls
 * an earlier step of the run applied keep their outcome.
 */
export async function failClaimedImport(
  store: Store,
  clock: Clock,
  claimed: DataImport,
  owner: string,
  reference: string,
): Promise<boolean> {
  const payloads = await store.imports.payloads(claimed.company_id, claimed.id)
  const current = await store.imports.get(claimed.company_id, claimed.id)
  const done = current?.payloads_applied ?? 0
  const failed = refusedWhole(
    `The import could not be applied because of an internal error (reference ${reference}); nothing of it was imported`,
  )
  const refused = payloads.slice(done)
  const details = boundedDetails([
    ...(current?.details.slice(0, done) ?? []),
    ...detailsOf(
      claimed,
      refused,
      refused.map(() => failed),
    ),
  ])
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
  resync: Resync,
): Promise<PayloadOutcome[]> {
  if (claimed.target === 'records') return applyRecordCalls(tx, company, recordCalls, now, changes, resync)
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
