import { type Static, Type } from 'typebox'
import { recalculate, stampedBy } from '../calculation/recalculation.ts'
import type { Clock } from '../clock.ts'
import { rowTime } from '../domain/formats.ts'
import { storedId } from '../domain/ids.ts'
import { Nullable } from '../domain/schemas.ts'
import { type Issue, NotFoundError, ValidationError } from '../errors.ts'
import {
  type CommissionLine,
  type CustomMetric,
  METRIC_KINDS,
  type Quota,
  type QuotaType,
  type QuotaValue,
  type ReportingStructure,
  type Statement,
} from '../store/model.ts'
import type { Store } from '../store/port.ts'
import type { CommissionLineChanges, QuotaValueChanges, StatementChanges } from '../store/admin-edits.ts'
import { renderStatementRows, renderStatementsAhead } from '../v2/statement-texts.ts'
import { checkPlanMetrics } from '../fixtures/plan-definitions.ts'
import { existingCompany } from './company-admin.ts'

/**
 * Edits of a company's stored data, shared by the CLI and the /admin routes: what a company changes in the
 * product, so that schema changes and incremental syncs can be shown and tested. Nothing here knows about HTTP.
 * A row edit sets the row's modification time: the given `modified_at`, or now. Each edit finds its company again in
 * its transaction: a MongoDB store deletes a company's own document first and sweeps its rows after, and an edit run
 * between the two would find its row, answer 200 and recalculate for a company gone (a 404, as on SQLite).
 */

/** A change's modification time: the given instant (read as UTC without an offset), else `now`. */
function modificationTime(now: string, given: string | undefined): string {
  if (given === undefined) return now
  const time = rowTime(given)
  if ('problem' in time) throw new ValidationError({ resource: 'modified_at', description: time.problem })
  return time.at
}

/** `record`, else NotFoundError naming what was looked for by `key` (its id, or a metric's api_key). */
function found<T>(record: T | null, resource: string, id: string, key = 'id'): T {
  if (!record) throw new NotFoundError(resource, `No ${resource.replaceAll('_', ' ')} with ${key} ${id} in this company`)
  return record
}

/** The stored form of a row's id; a malformed id names no row. */
const rowId = (id: string, resource: string): string => found(storedId(id), resource, id)

/**
 * Changes a quota's type: every value is then rendered by the new type, no value or its modification time changes.
 * A plan's target is an amount quota's value, so the plans that read the quota gain or lose their targets: every
 * cell of theirs is recalculated in the same transaction.
 */
export async function changeQuotaType(store: Store, clock: Clock, companyId: string, quotaId: string, type: QuotaType): Promise<Quota> {
  const company = (await existingCompany(store, companyId)).id
  const id = rowId(quotaId, 'quota')
  return store.transaction(
    async (tx) => {
      await existingCompany(tx, company)
      // The time once the transaction holds the store (see archiveUsers).
      const timing = await stampedBy(clock, tx)
      found(await tx.quotas.setType(company, id, type, timing.now), 'quota', quotaId)
      const reading = (await tx.plans.list(company)).filter((plan) => plan.quota_id === id)
      if (reading.length > 0) await recalculate(tx, company, { plans: new Set(reading.map((plan) => plan.id)) }, timing)
      return found(await tx.quotas.get(company, id), 'quota', quotaId)
    },
    { company },
  )
}

/** An edit of a row: the fields to set, and its modification time (now when not given). */
type RowEdit<Changes> = Omit<Changes, 'modified_at'> & { modified_at?: string }

/** Applies a row edit through one of the store's admin edits, stamping the modification time (`now` unless given). */
async function reviseRow<Changes extends { modified_at: string }, Row>(
  now: string,
  id: string,
  edit: RowEdit<Changes>,
  update: (id: string, changes: Changes) => Promise<Row | null>,
  resource: string,
): Promise<Row> {
  const changes = { ...edit, modified_at: modificationTime(now, edit.modified_at) } as Changes
  return found(await update(rowId(id, resource), changes), resource, id)
}

export type StatementEdit = RowEdit<StatementChanges>
export type CommissionLineEdit = RowEdit<CommissionLineChanges>
export type QuotaValueEdit = RowEdit<QuotaValueChanges>

/**
 * Changes a statement and renders its v2 row again (its rendering went with the change). A calculated statement
 * moved back to `pending` is recalculated at once: only validated and paid statements keep what they state.
 */
export async function reviseStatement(store: Store, clock: Clock, companyId: string, id: string, edit: StatementEdit): Promise<Statement> {
  const company = (await existingCompany(store, companyId)).id
  return store.transaction(
    async (tx) => {
      await existingCompany(tx, company)
      // The time once the transaction holds the store (see stampedBy).
      const timing = await stampedBy(clock, tx)
      const revised = await reviseRow(
        timing.now,
        id,
        edit,
        (row, changes) => tx.adminEdits.updateStatement(company, row, changes),
        'statement',
      )
      await renderStatementRows(tx, company, [revised])
      if (edit.status !== 'pending' || !revised.plan_id || !revised.period) return revised
      // Pending, it would be a result of no plan, which no calculation would ever state again nor remove.
      if (!(await tx.plans.get(company, revised.plan_id))) {
        throw new ValidationError({
          error: 'ConflictError',
          resource: 'status',
          description: 'the plan that calculated this statement was deleted: it stays validated or paid',
        })
      }
      const cell = { user_id: revised.user_id, period: revised.period }
      await recalculate(tx, company, { cells: new Map([[revised.plan_id, [cell]]]) }, timing)
      // The cell may state nothing any more (its records are gone): the statement as edited is what there was.
      return (await tx.statements.findOfPlan(company, revised.plan_id, { cells: [cell] }))[0] ?? revised
    },
    { company },
  )
}

export async function reviseCommissionLine(
  store: Store,
  clock: Clock,
  companyId: string,
  id: string,
  edit: CommissionLineEdit,
): Promise<CommissionLine> {
  const company = (await existingCompany(store, companyId)).id
  return store.transaction(
    async (tx) => {
      await existingCompany(tx, company)
      const { now } = await stampedBy(clock, tx)
      const revised = await reviseRow(
        now,
        id,
        edit,
        (row, changes) => tx.adminEdits.updateCommissionLine(company, row, changes),
        'commission_line',
      )
      await forgetCellSums(tx, company, revised)
      return revised
    },
    { company },
  )
}

/**
 * A line edited by hand no longer states what its statement's sums counted: the statement keeps what it serves,
 * but its cell is calculated whole the next time it changes (src/calculation/recalculation.ts, `addToCells`).
 */
async function forgetCellSums(tx: Store, companyId: string, line: CommissionLine): Promise<void> {
  if (!line.plan_id || !line.period) return
  const statements = await tx.statements.findOfPlan(companyId, line.plan_id, { cells: [{ user_id: line.user_id, period: line.period }] })
  const forgotten = statements.filter((statement) => statement.sums).map(({ sums: _sums, ...statement }) => statement)
  if (forgotten.length === 0) return
  await tx.statements.save(forgotten)
  await renderStatementRows(tx, companyId, forgotten)
}

/** Changes a quota value, and recalculates the plans' cells that take it as their target. */
export async function reviseQuotaValue(
  store: Store,
  clock: Clock,
  companyId: string,
  id: string,
  edit: QuotaValueEdit,
): Promise<QuotaValue> {
  const company = (await existingCompany(store, companyId)).id
  return store.transaction(
    async (tx) => {
      await existingCompany(tx, company)
      const timing = await stampedBy(clock, tx)
      const value = await reviseRow(
        timing.now,
        id,
        edit,
        (row, changes) => tx.adminEdits.updateQuotaValue(company, row, changes),
        'quota_value',
      )
      const quotaValues = new Map([[value.quota_id, [{ user_id: value.user_id, period: value.period }]]])
      await recalculate(tx, company, { quotaValues }, timing)
      return value
    },
    { company },
  )
}

const ApiName = Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' })

/**
 * An edit of a reporting structure: its name; the API keys of the custom metrics to show, in order (replaces the
 * list); record_reporting only, the API keys of the data-table fields to show, in order (replaces the list).
 */
export const StructureEditSchema = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1 })),
    metrics: Type.Optional(Type.Array(ApiName)),
    fields: Type.Optional(Type.Array(ApiName)),
  },
  { additionalProperties: false },
)
export type StructureEdit = Static<typeof StructureEditSchema>

function duplicatesOf(keys: readonly string[]): string[] {
  return keys.filter((key, index) => keys.indexOf(key) !== index)
}

/** Adds, removes or reorders the metrics and fields a reporting structure shows, or renames it; then renders statement rows for it. */
export async function reviseStructure(
  store: Store,
  clock: Clock,
  companyId: string,
  id: string,
  edit: StructureEdit,
): Promise<ReportingStructure> {
  const company = (await existingCompany(store, companyId)).id
  const structure = found(await store.structures.get(company, rowId(id, 'reporting_structure')), 'reporting_structure', id)
  const issues: Issue[] = []
  if (edit.metrics) {
    const known = new Set((await store.metrics.list(company)).map((metric) => metric.api_key))
    for (const key of edit.metrics.filter((item) => !known.has(item)))
      issues.push({ resource: 'metrics', description: `no custom metric ${key}` })
    for (const key of duplicatesOf(edit.metrics)) issues.push({ resource: 'metrics', description: `${key} is listed twice` })
  }
  if (edit.fields) {
    const table = structure.data_table_id ? await store.dataTables.get(company, structure.data_table_id) : null
    if (!table) issues.push({ resource: 'fields', description: 'only a record_reporting structure shows data-table fields' })
    const known = new Set(table?.fields.map((field) => field.api_key) ?? [])
    for (const key of edit.fields.filter((item) => table && !known.has(item)))
      issues.push({ resource: 'fields', description: `no field ${key} in ${table?.key}` })
    for (const key of duplicatesOf(edit.fields)) issues.push({ resource: 'fields', description: `${key} is listed twice` })
  }
  if (issues.length > 0) throw new ValidationError(issues)
  const changes = {
    modified_at: clock.now().toISOString(),
    ...(edit.name === undefined ? {} : { name: edit.name }),
    ...(edit.metrics === undefined ? {} : { metric_keys: edit.metrics }),
    ...(edit.fields === undefined ? {} : { field_keys: edit.fields }),
  }
  const changed = await store.transaction(
    async (tx) => {
      await existingCompany(tx, company)
      return found(await tx.adminEdits.updateStructure(company, structure.id, changes), 'reporting_structure', id)
    },
    { company },
  )
  await renderStatementsAhead(store, company)
  return changed
}

/** An edit of a custom metric's definition; a field left out is unchanged. */
export const MetricEditSchema = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1 })),
    kind: Type.Optional(Type.Enum([...METRIC_KINDS])),
    currencies: Type.Optional(Nullable(Type.Array(Type.String({ pattern: '^[A-Z]{3}$' })))),
    enum_values: Type.Optional(Nullable(Type.Array(Type.String(), { minItems: 1 }))),
  },
  { additionalProperties: false },
)
export type MetricEdit = Static<typeof MetricEditSchema>

/**
 * Changes a custom metric's definition, named by its API key. Stored values stay; they are rendered by the new
 * kind, and statement rows are rendered again for it. A metric a plan writes keeps what the plan's values need
 * (its kind, its tiers' names as enum values): change or delete the plan first.
 */
export async function reviseMetric(store: Store, clock: Clock, companyId: string, apiKey: string, edit: MetricEdit): Promise<CustomMetric> {
  const company = (await existingCompany(store, companyId)).id
  // The plans are read and the metric changed in one transaction: a plan that starts writing the metric meanwhile
  // (saved by another instance, or the CLI, checked against the metric as it was) is then either seen here or
  // checked against the metric as changed, never left writing values the metric no longer fits.
  const changed = await store.transaction(
    async (tx) => {
      await existingCompany(tx, company)
      const metrics = await tx.metrics.list(company)
      const metric = found(metrics.find((item) => item.api_key === apiKey) ?? null, 'custom_metric', apiKey, 'api_key')
      const kind = edit.kind ?? metric.kind
      const enumValues = edit.enum_values === undefined ? metric.enum_values : edit.enum_values
      if (kind === 'enum' && (!enumValues || enumValues.length === 0)) {
        throw new ValidationError({ resource: 'enum_values', description: 'an enum metric needs enum_values' })
      }
      const revised = metrics.map((item) => (item.id === metric.id ? { ...item, kind, enum_values: enumValues } : item))
      const resource = kind === metric.kind ? 'enum_values' : 'kind'
      const issues: Issue[] = []
      for (const plan of await tx.plans.list(company)) {
        if (!Object.values(plan.metrics).includes(apiKey)) continue
        checkPlanMetrics(plan, revised, '', (_path, description) =>
          issues.push({ resource, description: `plan ${plan.name} writes it: ${description}` }),
        )
      }
      if (issues.length > 0) throw new ValidationError(issues)
      return found(
        await tx.adminEdits.updateMetric(company, metric.id, { ...edit, modified_at: clock.now().toISOString() }),
        'custom_metric',
        apiKey,
        'api_key',
      )
    },
    { company },
  )
  await renderStatementsAhead(store, company)
  return changed
}
