import { isDeepStrictEqual } from 'node:util'
import { ownValue } from '../domain/stored-values.ts'
import type { Clock } from '../clock.ts'
import { newId } from '../ids.ts'
import { inSlices, Pacer, PACING_MS } from '../pacing.ts'
import type { CellSums, CommissionLine, Company, DataTableRecord, Money, Plan, Quota, Statement, StatementStatus } from '../store/model.ts'
import type { CalculationCell, LineFigures, LineRepricing, Store } from '../store/port.ts'
import { renderStatementRows } from '../v2/statement-texts.ts'
import {
  addToCell,
  type CalculatedLine,
  type CalculatedStatement,
  type CalculationProblem,
  type CellResult,
  calculateCell,
  cellKey,
  type CompanySettings,
  effectiveValues,
  isActiveIn,
  type Placement,
  placeRecord,
  type UserDirectory,
  userDirectory,
} from './engine.ts'
import type { RecalculationSummary } from './schemas.ts'

export type { RecalculationSummary } from './schemas.ts'

/**
 * Recalculation: runs the engine on exactly the cells (plan, user, period) a change touches, and writes only the
 * statements and lines whose values changed, so that an incremental sync (`last_modified_after`) sees exactly
 * what changed. It runs inside the caller's transaction (an import's, an admin edit's, a fixture load's), so
 * results commit with the change that caused them or not at all. Statements that are `validated` or `paid`
 * are frozen: their cell is never recalculated, its lines included.
 */

/** What changed that plans read. Every part is optional. */
export interface CalculationChanges {
  /** Records written or deleted, by table id: their store ids. */
  records?: ReadonlyMap<string, ReadonlySet<string>>
  /** Of those, the ones the change holds as it wrote them (null: deleted), so that they are not read again. */
  written?: ReadonlyMap<string, DataTableRecord | null>
  /**
   * Each of those as it was before the change (null: it did not exist): its lines were calculated from it, so it
   * gives the cells the record leaves and the values its lines hold. Required with `records`.
   */
  previous?: ReadonlyMap<string, DataTableRecord | null>
  /** Tables rewritten wholesale (an `all=true` import): every plan that reads one is recalculated in full. */
  tables?: ReadonlySet<string>
  /** Users created, or whose currency or archive changed. */
  users?: ReadonlySet<string>
  /** Quota values changed, by quota id. */
  quotaValues?: ReadonlyMap<string, readonly CalculationCell[]>
  /** Cells back from frozen, by plan id (a statement moved back to pending): calculated from the plan's records as they are. */
  cells?: ReadonlyMap<string, readonly CalculationCell[]>
  /** Plans created or replaced: recalculated in full. */
  plans?: ReadonlySet<string>
  /** Everything: the exchange rates changed, or the company was just loaded. */
  everything?: boolean
}

/** Collects, as an import writes, what its writes change that plans read. */
export class CalculationChangeLog implements CalculationChanges {
  readonly records = new Map<string, Set<string>>()
  readonly tables = new Set<string>()
  readonly users = new Set<string>()

  readonly written = new Map<string, DataTableRecord | null>()
  readonly previous = new Map<string, DataTableRecord | null>()

  /** A record was written (as `record`) or deleted (null); it was `before` (null: it did not exist). */
  recordChanged(tableId: string, recordId: string, record: DataTableRecord | null, before: DataTableRecord | null): void {
    const ids = this.records.get(tableId)
    if (ids) ids.add(recordId)
    else this.records.set(tableId, new Set([recordId]))
    this.written.set(recordId, record)
    // Written twice in one change, it was before as the first write found it: what its lines were calculated from.
    if (!this.previous.has(recordId)) this.previous.set(recordId, before)
  }

  /** The table was emptied before the import wrote it again. */
  tableRewritten(tableId: string): void {
    this.tables.add(tableId)
  }

  /** A user was created, or changed in a way plans see (currency, archive). */
  userChanged(userId: string): void {
    this.users.add(userId)
  }
}

export interface RecalculationOptions {
  /** The modification time of what it writes. */
  now: string
  /**
   * The time as each plan's rows are written, when given: the rows stamped `now` take it instead (`stampAsWritten`).
   * An incremental v2 sync reads a row once it is committed, so the closer its stamp to that commit, the smaller the
   * margin a sync's mark needs (docs/decisions.md, "The high-water mark"): a full recalculation of 200,000 deals
   * takes seconds, which stamps taken at its start would all precede.
   */
  stamp?: () => string
  /**
   * A company being loaded from a fixture: rows are stamped with the latest modification time of their inputs
   * (records, quota value) rather than now, and get the status `statusOf` gives their period.
   */
  loading?: { statusOf(plan: Plan, period: string): StatementStatus }
  /** Where the ids of new statements and lines come from (a fixture's reload makes the ids its load made); `newId` by default. */
  ids?: () => string
  /** How long it works before it gives the event loop a turn (`PACING_MS` by default). */
  pacingMs?: number
}

/** Problems kept in a summary: enough to see what is wrong, bounded whatever the data. */
export const KEPT_PROBLEMS = 100

/** Records (and lines) read per query when a plan reads its whole table: a few milliseconds of work each. */
const RECORD_PAGE = 1000

/** Lines written per store call: a few milliseconds of work each. */
const WRITE_SLICE = 1000

/** What a plan needs to know of its company. */
export function companySettings(company: Company): CompanySettings {
  return {
    defaultCurrency: company.default_currency,
    fiscalYearStartMonth: company.fiscal_year_start_month,
    exchangeRates: company.exchange_rates ?? {},
  }
}

const FROZEN: ReadonlySet<StatementStatus> = new Set(['validated', 'paid'])

/**
 * The options of a calculation on the service's clock: its rows stamped as they are written. Called in the
 * transaction `tx`, once it holds the store: a controlled clock reads its offset again first (through `tx`), since
 * another process may have moved it while this one waited, and a sync that walked after that move would miss a row
 * stamped before it.
 */
export async function stampedBy(clock: Clock, tx: Store): Promise<RecalculationOptions> {
  await clock.sync?.(tx.clockOffset)
  return { now: clock.now().toISOString(), stamp: () => clock.now().toISOString() }
}

/** What no recalculation did: the summary a recalculation starts from. */
export function noCalculation(): RecalculationSummary {
  return { cells: 0, statements_written: 0, statements_deleted: 0, lines_written: 0, lines_deleted: 0, problems: [] }
}

/** Recalculates what `changes` touch, for every plan of the company. */
export async function recalculate(
  tx: Store,
  companyId: string,
  changes: CalculationChanges,
  options: RecalculationOptions,
): Promise<RecalculationSummary> {
  const summary = noCalculation()
  const plans = await tx.plans.list(companyId)
  const company = await tx.companies.get(companyId)
  if (plans.length === 0 || !company || !touchesAny(changes)) return summary

  const context: Context = {
    tx,
    company,
    settings: companySettings(company),
    users: await allUsers(tx, companyId),
    options,
    summary,
    written: [],
    pacer: new Pacer(options.pacingMs ?? PACING_MS),
  }

  // Rows stamped as they are written wait, every plan's, until every plan is calculated: a plan's rows written before
  // the next plans are calculated (seconds for 200,000 deals) waited that long, stamped, for the commit; an
  // incremental sync that walked meanwhile, its mark past their stamp, never read them. A plan reads only its own
  // rows, so none of them waits for another plan's writes. Rows stamped otherwise (a load's, by their inputs; a dry
  // run's) are written as each plan is calculated: held until the last plan, they took a load or a reset of three
  // plans on 200,000 deals past a heap of 900 MiB, where 700 MiB did.
  const planWrites: [Plan, Writes][] = []
  const done = async (plan: Plan, writes: Writes) => {
    if (stampsAsWritten(options)) planWrites.push([plan, writes])
    else await flush(context, plan, writes)
  }
  for (const plan of plans) {
    if (changes.everything || changes.plans?.has(plan.id) || changes.tables?.has(plan.table_id)) {
      await done(plan, await recalculatePlan(context, plan))
      continue
    }
    // A cell back from frozen kept lines of records as they were when it froze, and misses records that came into
    // it meanwhile: it is calculated from the plan's records as they are, as a full recalculation would. Its rows are
    // written at once: the plan's other cells are found from what is stored.
    const reopened = changes.cells?.get(plan.id) ?? []
    if (reopened.length > 0)
      await flush(
        context,
        plan,
        await recalculatePlan(context, plan, new Map(reopened.map((cell) => [cellKey(cell.user_id, cell.period), cell]))),
      )
    const touched = await touchedCells(context, plan, changes)
    const writes = noWrites()
    await addToCells(context, plan, touched, writes)
    if (touched.cells.size > 0) await recalculateCells(context, plan, touched, changes, writes)
    await done(plan, writes)
  }
  for (const [plan, writes] of planWrites) await flush(context, plan, writes)
  await renderStatementRows(tx, companyId, context.written)
  return summary
}

/** Carries a dry run's summary out of the transaction it rolls back. */
class DryRun extends Error {
  readonly summary: RecalculationSummary

  constructor(summary: RecalculationSummary) {
    super('a dry run: rolled back')
    this.summary = summary
  }
}

/**
 * What a full recalculation of the company would write now, nothing written (its transaction is rolled back): no
 * row, when every change so far was recalculated as it should have been. The crash loop and the tests check it.
 */
export async function fullRecalculationDryRun(store: Store, companyId: string, now: string): Promise<RecalculationSummary> {
  try {
    await store.transaction(async (tx) => {
      throw new DryRun(await recalculate(tx, companyId, { everything: true }, { now }))
    })
  } catch (error) {
    if (error instanceof DryRun) return error.summary
    throw error
  }
  throw new Error('a dry run committed')
}

function touchesAny(changes: CalculationChanges): boolean {
  return Boolean(
    changes.everything ||
    changes.records?.size ||
    changes.tables?.size ||
    changes.users?.size ||
    changes.quotaValues?.size ||
    changes.cells?.size ||
    changes.plans?.size,
  )
}

interface Context {
  tx: Store
  company: Company
  settings: CompanySettings
  users: UserDirectory
  options: RecalculationOptions
  summary: RecalculationSummary
  /** Statements written, to render their v2 rows again. */
  written: Statement[]
  pacer: Pacer
}

async function allUsers(tx: Store, companyId: string): Promise<UserDirectory> {
  return userDirectory(await tx.users.list(companyId, { offset: 0, limit: Number.MAX_SAFE_INTEGER }))
}

/** The cells of a plan a change touches, and the changed records already placed. */
interface TouchedCells {
  cells: Map<string, CalculationCell>
  /** Records read while finding the cells, by id: they are not read again. */
  records: Map<string, DataTableRecord>
  /**
   * Changed records placed in a cell they were not in before, by cell key: where the change did nothing else, such a
   * cell can be calculated from its statement's sums and these alone (`addToCells`).
   */
  additions: Map<string, Placement[]>
  /** Cells the change touches otherwise: a record left it, or changed in it; a user, a target changed. */
  whole: Set<string>
}

async function touchedCells(context: Context, plan: Plan, changes: CalculationChanges): Promise<TouchedCells> {
  const { tx, company } = context
  const touched: TouchedCells = { cells: new Map(), records: new Map(), additions: new Map(), whole: new Set() }
  const addCell = (cell: CalculationCell) => {
    const key = cellKey(cell.user_id, cell.period)
    touched.cells.set(key, cell)
    return key
  }
  const addCellOf = (record: DataTableRecord) => {
    const outcome = placeRecord(plan, record, context.users, context.settings)
    return outcome.kind === 'placed' ? addCell({ user_id: outcome.placement.userId, period: outcome.placement.period }) : null
  }
  const place = (record: DataTableRecord) => {
    touched.records.set(record.id, record)
    const key = addCellOf(record)
    if (key) touched.whole.add(key)
  }
  // Where each changed record was: a record placed in another cell now is an addition to that one.
  const left = new Map<string, string>()
  const placeChanged = (record: DataTableRecord) => {
    touched.records.set(record.id, record)
    const outcome = placeRecord(plan, record, context.users, context.settings)
    if (outcome.kind !== 'placed') return
    const key = addCell({ user_id: outcome.placement.userId, period: outcome.placement.period })
    if (left.get(record.id) === key) touched.whole.add(key)
    else push(touched.additions, key, outcome.placement)
  }

  // A changed record leaves the cell it was in and enters the one it is placed in now. The cell it was in is where
  // the record as it was is placed: every cell that is not frozen was calculated from the records as they were
  // (a frozen one is never calculated again), under the users as they are (a records import changes no user, and a
  // change of users recalculated the cells it moved records out of).
  const changedIds = changes.records?.get(plan.table_id)
  if (changedIds && changedIds.size > 0) {
    for (const id of changedIds) {
      const before = changes.previous?.get(id)
      const key = before ? addCellOf(before) : null
      if (key) {
        left.set(id, key)
        touched.whole.add(key)
      }
    }
    const unknown = [...changedIds].filter((id) => !changes.written?.has(id))
    for (const id of changedIds) {
      const record = changes.written?.get(id)
      if (record) placeChanged(record)
    }
    for (const record of (await tx.records.getMany(company.id, plan.table_id, unknown)).values()) placeChanged(record)
  }
  // A user's records may name them for the first time, or earn in another currency or after an archive.
  if (changes.users && changes.users.size > 0) {
    const userIds = [...changes.users]
    for (const statement of await tx.statements.findOfPlan(company.id, plan.id, { userIds }))
      if (statement.period) addCell({ user_id: statement.user_id, period: statement.period })
    for (const line of await tx.commissionLines.findOfPlan(company.id, plan.id, { userIds }))
      if (line.period) addCell({ user_id: line.user_id, period: line.period })
    // A target makes a cell, deals or not: one that could not be stated in the user's former currency may be now.
    if (plan.quota_id)
      for (const value of await allQuotaValues(tx, company.id, plan.quota_id))
        if (changes.users.has(value.user_id)) addCell({ user_id: value.user_id, period: value.period })
    await eachRecord(context, plan, (record) => {
      const outcome = placeRecord(plan, record, context.users, context.settings)
      if (outcome.kind === 'placed' && changes.users?.has(outcome.placement.userId)) place(record)
    })
  }
  if (plan.quota_id) for (const cell of changes.quotaValues?.get(plan.quota_id) ?? []) addCell(cell)
  // Only a change of records alone leaves the other records of a cell as its statement's sums counted them.
  if (changes.users?.size || changes.quotaValues?.size || changes.cells?.size) touched.additions.clear()
  return touched
}

/**
 * Calculates the cells records were only added to (`TouchedCells.additions`) from their statements' sums and the
 * added records, without reading the lines already there, where the engine can (`addToCell`): a pending statement
 * whose sums hold, in the user's currency. The cells done are taken out of `touched`; the others are calculated
 * whole.
 */
async function addToCells(context: Context, plan: Plan, touched: TouchedCells, writes: Writes): Promise<void> {
  const { tx, company } = context
  const keys = [...touched.additions.keys()].filter((key) => !touched.whole.has(key))
  if (keys.length === 0) return
  const cells = keys.map((key) => touched.cells.get(key) as CalculationCell)
  const stated = new Map<string, Statement[]>()
  for (const statement of await tx.statements.findOfPlan(company.id, plan.id, { cells }))
    push(stated, cellKey(statement.user_id, statement.period ?? ''), statement)
  const quota = plan.quota_id ? await tx.quotas.get(company.id, plan.quota_id) : null
  const targets = quota ? await quotaTargets(tx, company.id, quota, cells) : new Map<string, { value: number; modified_at: string }>()
  for (const key of keys) {
    const [statement, ...duplicates] = stated.get(key) ?? []
    const user = statement && context.users.byId.get(statement.user_id)
    if (!statement || duplicates.length > 0 || !user || !holdsItsSums(statement, user.currency ?? company.default_currency)) continue
    const target = targets.get(key) ?? null
    const entries = touched.additions.get(key) ?? []
    const inputs = { plan, user, period: statement.period as string, entries, quota, quotaValue: target?.value ?? null }
    const result = addToCell(inputs, statement.sums as CellSums, context.settings)
    if (!result) continue
    diffCell(context, plan, { key, result, statements: [statement], lines: [], records: touched.records, target }, writes)
    touched.cells.delete(key)
    for (const entry of entries) touched.records.delete(entry.recordId)
  }
}

/**
 * Whether a statement's sums count its cell's lines as they are: it has them (one calculated before they were kept
 * has none, and an edit of a line of its cell drops them), it is pending, and in the user's currency. (A payment
 * edited by hand is not in the sums: the cell's payment is stated again from them.)
 */
function holdsItsSums(statement: Statement, currency: string): boolean {
  return Boolean(statement.sums) && !FROZEN.has(statement.status) && statement.currency === currency
}

/**
 * Whether a statement's last calculation could not state its figures (an amount or its target not converted, a
 * figure past what a number holds), so that its cell has no lines to be recalculated from. Its achievement tells,
 * which no edit changes: a payment edited by hand (set on such a statement, or emptied on another) does not.
 */
function stoodUnknown(statement: Statement): boolean {
  return statement.achievement === null || statement.payment === null
}

/** Calls `visit` with every record of the plan's table, a page at a time. */
async function eachRecord(context: Context, plan: Plan, visit: (record: DataTableRecord) => void): Promise<void> {
  const { tx, company, pacer } = context
  for (let afterId: string | null = null; ;) {
    const page = await tx.records.page(company.id, plan.table_id, afterId, RECORD_PAGE)
    for (const record of page) visit(record)
    if (page.length < RECORD_PAGE) return
    afterId = page[page.length - 1].id
    await pacer.pause()
  }
}

/** Calls `visit` with every line the plan calculated, a page of its table's lines at a time. */
async function eachLineOfPlan(context: Context, plan: Plan, visit: (line: CommissionLine) => void): Promise<void> {
  const { tx, company, pacer } = context
  for (let afterId: string | undefined; ;) {
    const page = await tx.commissionLines.page(company.id, plan.table_id, { afterId, limit: RECORD_PAGE })
    for (const line of page) if (line.plan_id === plan.id) visit(line)
    if (page.length < RECORD_PAGE) return
    afterId = page[page.length - 1].id
    await pacer.pause()
  }
}

/**
 * Recalculates some cells of a plan. A cell is calculated from all its records: the changed ones (read and placed
 * again), and the unchanged ones, taken from their lines (what the line was calculated from is what the record still
 * holds), unless their user changed. A cell whose last calculation could not convert an amount has no lines to take
 * them from: its records are found by reading the plan's table.
 */
async function recalculateCells(
  context: Context,
  plan: Plan,
  touched: TouchedCells,
  changes: CalculationChanges,
  writes: Writes,
): Promise<void> {
  const { tx, company } = context
  const table = await tx.dataTables.get(company.id, plan.table_id)
  if (!table) return
  const cells = new Map(touched.cells)
  const stored = { statements: new Map<string, Statement[]>(), lines: new Map<string, LineFigures[]>() }
  const placements = new Map<string, Placement[]>()
  const placedIds = new Set<string>()
  const quota = plan.quota_id ? await tx.quotas.get(company.id, plan.quota_id) : null
  const changed = changes.records?.get(plan.table_id) ?? new Set<string>()
  const fields = { amount: plan.amount_field, externalId: table.id_field }
  // A record placed from what it is holds the values its stored line was calculated from unless the change wrote it
  // (the others are read again only because their user changed, or their cell could not be converted).
  const sameValuesAsLine = (record: DataTableRecord) => {
    if (!changed.has(record.id)) return true
    const before = changes.previous?.get(record.id)
    return Boolean(before) && isDeepStrictEqual(effectiveValues(before as DataTableRecord), effectiveValues(record))
  }

  const place = (placement: Placement): CalculationCell | null => {
    placedIds.add(placement.recordId)
    const key = cellKey(placement.userId, placement.period)
    push(placements, key, placement)
    if (cells.has(key)) return null
    const cell = { user_id: placement.userId, period: placement.period }
    cells.set(key, cell)
    return cell
  }

  // A record may now be placed in a cell not touched yet (its user was archived, say): that cell joins, until none does.
  let pending = [...cells.values()]
  while (pending.length > 0) {
    const statements = await tx.statements.findOfPlan(company.id, plan.id, { cells: pending })
    const lines = await tx.commissionLines.figuresOfPlan(company.id, plan.id, pending, fields)
    for (const statement of statements) push(stored.statements, cellKey(statement.user_id, statement.period ?? ''), statement)
    for (const line of lines) push(stored.lines, cellKey(line.user_id, line.period), line)
    const frozen = new Set(
      statements.filter((statement) => FROZEN.has(statement.status)).map((statement) => cellKey(statement.user_id, statement.period ?? '')),
    )
    const unconverted = new Set(
      statements
        .filter((statement) => stoodUnknown(statement) && !FROZEN.has(statement.status))
        .map((statement) => cellKey(statement.user_id, statement.period ?? '')),
    )

    const added: CalculationCell[] = []
    const unread: string[] = []
    for (const line of lines) {
      // A changed record is placed from what it is now (nothing, when it was deleted), never from its former line.
      if (frozen.has(cellKey(line.user_id, line.period)) || placedIds.has(line.record_id) || changed.has(line.record_id)) continue
      if (changes.users?.has(line.user_id)) unread.push(line.record_id)
      else place(entryOf(line))
    }
    if (unread.length > 0)
      for (const record of (await tx.records.getMany(company.id, plan.table_id, unread)).values()) touched.records.set(record.id, record)
    if (unconverted.size > 0) {
      await eachRecord(context, plan, (record) => {
        const outcome = placeRecord(plan, record, context.users, context.settings)
        if (outcome.kind === 'placed' && unconverted.has(cellKey(outcome.placement.userId, outcome.placement.period)))
          touched.records.set(record.id, record)
      })
    }
    for (const record of touched.records.values()) {
      if (placedIds.has(record.id)) continue
      const outcome = placeRecord(plan, record, context.users, context.settings)
      if (outcome.kind === 'problem') keepProblem(context.summary, outcome.problem)
      placedIds.add(record.id)
      const cell = outcome.kind === 'placed' ? place(outcome.placement) : null
      if (cell) added.push(cell)
    }
    pending = added
  }

  const targets = quota
    ? await quotaTargets(tx, company.id, quota, [...cells.values()])
    : new Map<string, { value: number; modified_at: string }>()
  for (const [key, cell] of cells) {
    await context.pacer.pause()
    const user = context.users.byId.get(cell.user_id)
    const cellStatements = stored.statements.get(key) ?? []
    if (cellStatements.some((statement) => FROZEN.has(statement.status))) continue
    const target = targets.get(key) ?? null
    const result =
      user && (placements.has(key) || (target && isActiveIn(plan, user, cell.period, context.settings)))
        ? calculateCell(
            { plan, user, period: cell.period, entries: placements.get(key) ?? [], quota, quotaValue: target?.value ?? null },
            context.settings,
          )
        : { statement: null, lines: [], problems: [] }
    const cellWrite = {
      key,
      result,
      statements: cellStatements,
      lines: stored.lines.get(key) ?? [],
      sameValuesAsLine,
      records: touched.records,
      target,
    }
    diffCell(context, plan, cellWrite, writes)
  }
}

/** An unchanged record's place in its cell, from its line: the values the line was calculated from are the record's. */
function entryOf(line: LineFigures): Placement {
  return {
    recordId: line.record_id,
    externalId: String(line.external_id ?? ''),
    date: line.date,
    amount: line.amount as Money,
    userId: line.user_id,
    period: line.period,
  }
}

/**
 * Recalculates every cell of a plan from all its records, and removes what no cell produces any more; with `only`,
 * the cells it names (by cell key), from the records placed in them (the whole table is read to find those). Returns
 * what to write, for the caller to `flush`.
 */
async function recalculatePlan(context: Context, plan: Plan, only?: ReadonlyMap<string, CalculationCell>): Promise<Writes> {
  const { tx, company } = context
  const cells = new Map<string, Placement[]>()
  const records = new Map<string, DataTableRecord>()
  await eachRecord(context, plan, (record) => {
    const outcome = placeRecord(plan, record, context.users, context.settings)
    // A record that cannot be placed is in no cell: reported by a calculation of the whole plan only.
    if (outcome.kind === 'problem' && !only) keepProblem(context.summary, outcome.problem)
    if (outcome.kind !== 'placed') return
    const key = cellKey(outcome.placement.userId, outcome.placement.period)
    if (only && !only.has(key)) return
    records.set(record.id, record)
    push(cells, key, outcome.placement)
  })
  const someCells = only ? [...only.values()] : undefined
  const quota = plan.quota_id ? await tx.quotas.get(company.id, plan.quota_id) : null
  const targets = quota ? await quotaTargets(tx, company.id, quota, someCells) : new Map<string, { value: number; modified_at: string }>()
  for (const [key] of targets) {
    const user = context.users.byId.get(key.slice(0, key.indexOf('|')))
    if (!cells.has(key) && user && isActiveIn(plan, user, key.slice(key.indexOf('|') + 1), context.settings)) cells.set(key, [])
  }

  const stored = { statements: new Map<string, Statement[]>(), lines: new Map<string, CommissionLine[]>() }
  const ofCells = someCells ? { cells: someCells } : undefined
  for (const statement of await tx.statements.findOfPlan(company.id, plan.id, ofCells))
    push(stored.statements, cellKey(statement.user_id, statement.period ?? ''), statement)
  const storeLine = (line: CommissionLine) => push(stored.lines, cellKey(line.user_id, line.period ?? ''), line)
  // A whole plan's lines are read a page at a time (they are as many as its records); some cells', at once.
  if (ofCells) for (const line of await tx.commissionLines.findOfPlan(company.id, plan.id, ofCells)) storeLine(line)
  else await eachLineOfPlan(context, plan, storeLine)

  const keys = new Set([...cells.keys(), ...stored.statements.keys(), ...stored.lines.keys()])
  const writes = noWrites()
  for (const key of [...keys].toSorted()) {
    await context.pacer.pause()
    const cellStatements = stored.statements.get(key) ?? []
    if (cellStatements.some((statement) => FROZEN.has(statement.status))) continue
    const separator = key.indexOf('|')
    const user = context.users.byId.get(key.slice(0, separator))
    const target = targets.get(key) ?? null
    const result =
      user && cells.has(key)
        ? calculateCell(
            { plan, user, period: key.slice(separator + 1), entries: cells.get(key) ?? [], quota, quotaValue: target?.value ?? null },
            context.settings,
          )
        : { statement: null, lines: [], problems: [] }
    const lines = stored.lines.get(key) ?? []
    diffCell(
      context,
      plan,
      { key, result, statements: cellStatements, lines, wholeLines: new Map(lines.map((line) => [line.id, line])), records, target },
      writes,
    )
  }
  return writes
}

/** The quota's values, by cell key: of some cells, or all of them. */
async function quotaTargets(
  tx: Store,
  companyId: string,
  quota: Quota,
  cells?: readonly CalculationCell[],
): Promise<Map<string, { value: number; modified_at: string }>> {
  const values = cells ? await tx.quotaValues.findCells(companyId, quota.id, cells) : await allQuotaValues(tx, companyId, quota.id)
  return new Map(values.map((value) => [cellKey(value.user_id, value.period), { value: value.value, modified_at: value.modified_at }]))
}

async function allQuotaValues(tx: Store, companyId: string, quotaId: string) {
  const values = []
  for (let afterId: string | undefined; ;) {
    const page = await tx.quotaValues.page(companyId, quotaId, { afterId, limit: RECORD_PAGE })
    values.push(...page)
    if (page.length < RECORD_PAGE) return values
    afterId = page[page.length - 1].id
  }
}

interface CellWrite {
  key: string
  result: CellResult
  /** What the cell held: its statement (one, unless something went wrong before) and its lines. */
  statements: readonly Statement[]
  lines: readonly StoredFigures[]
  /** A full recalculation's: the whole stored lines, by line id, compared field by field with what is calculated. */
  wholeLines?: ReadonlyMap<string, CommissionLine>
  /** Otherwise: whether a record of `records` holds the values its stored line was calculated from. */
  sameValuesAsLine?: (record: DataTableRecord) => boolean
  /** The records placed as they are now (changed, or read again): the others are as their lines say. */
  records: ReadonlyMap<string, DataTableRecord>
  target: { value: number; modified_at: string } | null
}

/** What diffing a line needs of what is stored: its figures (`LineFigures`) or the whole line. */
type StoredFigures = Pick<CommissionLine, 'id' | 'record_id' | 'date' | 'plan' | 'commission' | 'currency' | 'metrics'>

/** What the cells of a plan change: written once for the whole plan, a slice of rows per store call. */
interface Writes {
  savedLines: CommissionLine[]
  /** New figures of lines whose records did not change: written without the records' values. */
  repricedLines: LineRepricing[]
  goneLines: string[]
  savedStatements: Statement[]
  goneStatements: string[]
}

const noWrites = (): Writes => ({ savedLines: [], repricedLines: [], goneLines: [], savedStatements: [], goneStatements: [] })

/** Adds a cell's results to the writes: the rows that changed, new ones, and what the cell no longer produces. */
function diffCell(context: Context, plan: Plan, cell: CellWrite, writes: Writes): void {
  const { company, summary, options } = context
  const { result } = cell
  summary.cells += 1
  for (const problem of result.problems) keepProblem(summary, problem)

  const byRecord = new Map(cell.lines.map((line) => [line.record_id, line]))
  const keptLineIds = new Set<string>()
  const savedLines: CommissionLine[] = []
  for (const calculated of result.lines) {
    const previous = byRecord.get(calculated.record_id)
    const record = cell.records.get(calculated.record_id)
    if (previous) keptLineIds.add(previous.id)
    // The line of a record whose values did not change (most lines of a cell): only its figures can.
    const unchanged =
      previous && (!record || (cell.sameValuesAsLine?.(record) && previous.date === calculated.date && previous.plan === plan.name))
    if (unchanged) {
      if (sameFigures(previous, calculated, plan)) continue
      const { commission, currency, metrics } = calculated
      writes.repricedLines.push({ id: previous.id, commission, currency, metrics, modified_at: options.now })
      continue
    }
    const whole = previous ? cell.wholeLines?.get(previous.id) : undefined
    const line = lineOf(company.id, plan, cell.key, calculated, record ? effectiveValues(record) : (whole?.record_values ?? {}))
    if (whole && sameLine(whole, line)) continue
    const stamp = options.loading ? (record?.modified_at ?? options.now) : options.now
    savedLines.push({ ...line, id: previous?.id ?? (options.ids ?? newId)(), modified_at: stamp })
  }
  for (const line of savedLines) writes.savedLines.push(line)
  for (const line of cell.lines) if (!keptLineIds.has(line.id)) writes.goneLines.push(line.id)

  const [previous, ...duplicates] = cell.statements
  for (const duplicate of duplicates) writes.goneStatements.push(duplicate.id)
  if (!result.statement) {
    if (previous) writes.goneStatements.push(previous.id)
    return
  }
  const statement = statementOf(company.id, plan, result.statement, previous, options)
  if (previous && sameStatement(previous, statement)) return
  // New sums alone (a statement calculated before they were kept, or whose line was edited) change nothing served.
  const served = previous && sameServedStatement(previous, statement)
  const stamp = served ? previous.modified_at : options.loading ? inputsStamp(cell, savedLines, options.now) : options.now
  writes.savedStatements.push({ ...statement, modified_at: stamp })
}

async function flush(context: Context, plan: Plan, writes: Writes): Promise<void> {
  const { tx, company, summary } = context
  stampAsWritten(context.options, writes)
  await inSlices(context.pacer, writes.goneLines, WRITE_SLICE, (ids) => tx.commissionLines.deleteMany(company.id, ids))
  await inSlices(context.pacer, writes.savedLines, WRITE_SLICE, (lines) => tx.commissionLines.save(lines))
  await inSlices(context.pacer, writes.repricedLines, WRITE_SLICE, (changes) =>
    tx.commissionLines.reprice(company.id, plan.table_id, changes),
  )
  if (writes.goneStatements.length > 0) await tx.statements.deleteMany(company.id, writes.goneStatements)
  if (writes.savedStatements.length > 0) await tx.statements.save(writes.savedStatements)
  for (const statement of writes.savedStatements) context.written.push(statement)
  summary.lines_written += writes.savedLines.length + writes.repricedLines.length
  summary.lines_deleted += writes.goneLines.length
  summary.statements_written += writes.savedStatements.length
  summary.statements_deleted += writes.goneStatements.length
}

/** Whether the rows stamped with the calculation's `now` take the time they are written (`stampAsWritten`). */
function stampsAsWritten(options: RecalculationOptions): options is RecalculationOptions & { stamp: () => string } {
  return Boolean(options.stamp) && !options.loading
}

/** The rows stamped with the calculation's `now` take the time they are written, when the options tell it. */
function stampAsWritten(options: RecalculationOptions, writes: Writes): void {
  if (!stampsAsWritten(options)) return
  const { now, stamp } = options
  const written = stamp()
  if (written === now) return
  for (const rows of [writes.savedLines, writes.repricedLines, writes.savedStatements]) {
    for (const row of rows) if (row.modified_at === now) row.modified_at = written
  }
}

function lineOf(
  companyId: string,
  plan: Plan,
  key: string,
  calculated: CalculatedLine,
  recordValues: Record<string, unknown>,
): Omit<CommissionLine, 'id' | 'modified_at'> {
  return {
    company_id: companyId,
    environment: plan.environment,
    table_id: plan.table_id,
    record_id: calculated.record_id,
    user_id: key.slice(0, key.indexOf('|')),
    plan: plan.name,
    date: calculated.date,
    commission: calculated.commission,
    currency: calculated.currency,
    record_values: recordValues,
    metrics: calculated.metrics,
    plan_id: plan.id,
    period: key.slice(key.indexOf('|') + 1),
  }
}

function statementOf(
  companyId: string,
  plan: Plan,
  calculated: CalculatedStatement,
  previous: Statement | undefined,
  options: RecalculationOptions,
): Omit<Statement, 'modified_at'> {
  return {
    id: previous?.id ?? (options.ids ?? newId)(),
    company_id: companyId,
    environment: plan.environment,
    user_id: calculated.user_id,
    date: calculated.date,
    plan: calculated.plan,
    status: previous?.status ?? options.loading?.statusOf(plan, calculated.period) ?? 'pending',
    currency: calculated.currency,
    payment: calculated.payment,
    target: calculated.target,
    target_achievement: calculated.target_achievement,
    on_target_earning: calculated.on_target_earning,
    achievement: calculated.achievement,
    metrics: calculated.metrics,
    dimensions: previous?.dimensions ?? {},
    plan_id: plan.id,
    period: calculated.period,
    ...(calculated.sums ? { sums: calculated.sums } : {}),
  }
}

/** Loading a company: a statement was last modified when the latest of its inputs was. */
function inputsStamp(cell: CellWrite, lines: readonly CommissionLine[], fallback: string): string {
  const stamps = [...lines.map((line) => line.modified_at), ...(cell.target ? [cell.target.modified_at] : [])]
  return stamps.length === 0 ? fallback : stamps.reduce((latest, stamp) => (stamp > latest ? stamp : latest))
}

/**
 * Whether two rows' metrics serve the same. Every read of a metric shows one without a value as null, so a null value
 * and none are alike: a plan whose metric is renamed while its value is null changes nothing served.
 */
function sameMetrics(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  return servesAsIn(a, b) && servesAsIn(b, a)
}

/** Whether every metric of `one` serves in `other` what it serves in `one`. */
function servesAsIn(one: Record<string, unknown>, other: Record<string, unknown>): boolean {
  return Object.keys(one).every((key) =>
    one[key] === null ? (ownValue(other, key) ?? null) === null : isDeepStrictEqual(one[key], ownValue(other, key)),
  )
}

/** Whether two lines state the same (their id and modification time aside), whatever the order of their keys. */
function sameLine(stored: CommissionLine, calculated: Omit<CommissionLine, 'id' | 'modified_at'>): boolean {
  const { id: _id, modified_at: _modified, metrics: storedMetrics, ...fields } = stored
  const { metrics, ...rest } = calculated
  return sameMetrics(storedMetrics, metrics) && isDeepStrictEqual(fields, rest)
}

/** Whether a stored line states what was calculated for its record, which has not changed (so its values did not). */
function sameFigures(stored: StoredFigures, calculated: CalculatedLine, plan: Plan): boolean {
  return (
    stored.commission === calculated.commission &&
    stored.currency === calculated.currency &&
    stored.date === calculated.date &&
    stored.plan === plan.name &&
    sameMetrics(stored.metrics, calculated.metrics)
  )
}

function sameStatement(stored: Statement, calculated: Omit<Statement, 'modified_at'>): boolean {
  const { modified_at: _modified, metrics: storedMetrics, ...fields } = stored
  const { metrics, ...rest } = calculated
  return sameMetrics(storedMetrics, metrics) && isDeepStrictEqual(fields, rest)
}

/** Whether two statements serve the same: their sums aside. */
function sameServedStatement(stored: Statement, calculated: Omit<Statement, 'modified_at'>): boolean {
  const { modified_at: _modified, sums: _stored, metrics: storedMetrics, ...fields } = stored
  const { sums: _calculated, metrics, ...served } = calculated
  return sameMetrics(storedMetrics, metrics) && isDeepStrictEqual(fields, served)
}

function keepProblem(summary: RecalculationSummary, problem: CalculationProblem): void {
  if (summary.problems.length < KEPT_PROBLEMS) summary.problems.push(problem)
}

function push<T>(map: Map<string, T[]>, key: string, item: T): void {
  const items = map.get(key)
  if (items) items.push(item)
  else map.set(key, [item])
}
