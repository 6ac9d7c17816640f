import { type Static, Type } from 'typebox'
import { storedId } from '../domain/ids.ts'
import { flatAmount } from '../domain/money.ts'
import { OrNull } from '../domain/schemas.ts'
import { dataTableValue, metricValue, ownValue } from '../domain/stored-values.ts'
import { NotFoundError } from '../errors.ts'
import { findLiveStructure, rowsPath } from '../reporting/structures.ts'
import type {
  CommissionLine,
  CustomMetric,
  DataTable,
  ReportingStructure,
  Statement,
  StructureType,
  User,
  UserAttributeDefinition,
} from '../store/model.ts'
import type { Store } from '../store/port.ts'
import { checkOffsetQuery, type OffsetPage, type OffsetQuery, pageUrl, readOffsetPage, type WalkPositions } from './offset-page.ts'
import { type V1ReportingUser, v1ReportingUser, V1ReportingUserSchema } from './user-rows.ts'

/**
 * The two deprecated v1 reporting reads. They render the same stored statements and commission lines as the
 * v2 statements and records routes, so both versions always agree; only the shape differs.
 */

const Figure = OrNull(Type.Number())
const Currency = OrNull(Type.String())

/** A statement row; each custom metric (`<key>`, `<key>_currency`) and custom dimension (array of strings) follows. */
export const V1StatementRowSchema = Type.Object(
  {
    id: Type.String(),
    date: Type.String(),
    plan: Type.String(),
    user: V1ReportingUserSchema,
    payment: Figure,
    payment_currency: Currency,
    target: Figure,
    target_currency: Currency,
    target_achievement: Figure,
    on_target_earning: Figure,
    on_target_earning_currency: Currency,
    achievement: Figure,
    achievement_currency: Currency,
  },
  { additionalProperties: true },
)
export type V1StatementRow = Static<typeof V1StatementRowSchema> & { [custom: string]: unknown }

/** A commission line; `record`: the record's id-field and name-field values. */
export const V1RecordRowSchema = Type.Object({
  id: Type.String(),
  date: Type.String(),
  plan: Type.String(),
  user: V1ReportingUserSchema,
  record: Type.Object({ id: OrNull(Type.String()), name: OrNull(Type.Unknown()) }),
  commission: Type.Number(),
  commission_currency: Type.String(),
})
export type V1RecordRow = Static<typeof V1RecordRowSchema>

/** A page of a deprecated read, and the absolute URL of the v2 route that replaces it. */
export interface DeprecatedPage<Row> {
  page: OffsetPage<Row>
  successor: string
}

/** Sets `key` unless the row has it already: the standard fields win over a custom metric or dimension of the same name. */
function addMissing(row: { [key: string]: unknown }, key: string, value: unknown): void {
  if (!Object.hasOwn(row, key)) row[key] = value
}

/**
 * Every custom metric of the company as `<key>` and `<key>_currency`: an amount's number and currency; the
 * value of any other kind, with a null currency. A metric the statement has no value for is null. Values are
 * read as v2 reads them, so that both versions show the same figure for the same stored value.
 */
function addMetrics(row: V1StatementRow, metrics: readonly CustomMetric[], statement: Statement): void {
  for (const metric of metrics) {
    const key = metric.api_key
    for (const [name, value] of flatAmount(key, metricValue(metric, statement.metrics[key], statement.currency)))
      addMissing(row, name, value)
  }
}

/** The users of a page's rows, and the company's attribute definitions to render them with. */
interface UserContext {
  users: Map<string, User>
  definitions: UserAttributeDefinition[]
}

async function userContext(store: Store, companyId: string, userIds: string[]): Promise<UserContext> {
  const [users, definitions] = await Promise.all([store.users.getMany(companyId, userIds), store.userAttributes.list(companyId)])
  return { users, definitions }
}

function userOf(context: UserContext, userId: string): V1ReportingUser {
  return v1ReportingUser(userId, context.users.get(userId), context.definitions)
}

/**
 * One statement as `GET /v1/reporting` shows it. Every amount of a statement is in the statement's currency,
 * so each `<figure>_currency` is that currency, also when the figure itself is null.
 */
function v1StatementRow(statement: Statement, user: V1ReportingUser, metrics: readonly CustomMetric[]): V1StatementRow {
  const { currency } = statement
  const row: V1StatementRow = {
    id: statement.id,
    date: statement.date,
    plan: statement.plan,
    user,
    payment: statement.payment,
    payment_currency: currency,
    target: statement.target,
    target_currency: currency,
    target_achievement: statement.target_achievement,
    on_target_earning: statement.on_target_earning,
    on_target_earning_currency: currency,
    achievement: statement.achievement,
    achievement_currency: currency,
  }
  addMetrics(row, metrics, statement)
  for (const [key, values] of Object.entries(statement.dimensions)) addMissing(row, key, values)
  return row
}

/** The name-field value of a line's record in the form v2 shows it (`datatable.*`: a multi-valued field as `a;b`). */
function nameOf(line: CommissionLine, table: DataTable): unknown {
  const field = table.fields.find((candidate) => candidate.api_key === table.name_field)
  const raw = ownValue(line.record_values, table.name_field)
  return (field ? dataTableValue(field.type, raw) : raw) ?? null
}

/** One commission line as `GET /v1/reporting/{data_table_id}/records` shows it. */
function v1RecordRow(line: CommissionLine, table: DataTable, user: V1ReportingUser, keyedAs: string | undefined): V1RecordRow {
  const recordId = ownValue(line.record_values, table.id_field)
  return {
    id: line.id,
    date: line.date,
    plan: line.plan,
    user,
    // The record as it was when the commission was calculated. Its id is the one it is keyed by, as the upsert and
    // the table's read take it ("007" is not the record 7), else the value it was calculated with.
    record: {
      id: keyedAs ?? (recordId === undefined || recordId === null ? null : String(recordId)),
      name: nameOf(line, table),
    },
    commission: line.commission,
    commission_currency: line.currency,
  }
}

/**
 * The v2 route that replaces a deprecated read: the rows route of the first live structure (in creation
 * order) of the type that matches, or the discovery list when the company has none.
 */
async function successorUrl(store: Store, companyId: string, base: string, type: StructureType, tableId: string | null): Promise<string> {
  const structures = await store.structures.list(companyId)
  const successor = structures.find(
    (structure) => structure.environment === 'live' && structure.type === type && (tableId === null || structure.data_table_id === tableId),
  )
  return base + (successor ? rowsPath(type, successor.id) : '/v2/data-structures')
}

/**
 * `GET /v1/reporting` (and its alias `GET /v1/reporting/statements`, `path` being the one called, which `next`
 * keeps): the live statements of the company, in id (creation) order.
 */
export async function listStatementRows(
  store: Store,
  companyId: string,
  query: OffsetQuery,
  base: string,
  positions: WalkPositions,
  path: string,
): Promise<DeprecatedPage<V1StatementRow>> {
  const paging = checkOffsetQuery(query)
  const page = await readOffsetPage(
    paging,
    {
      count: () => store.statements.count(companyId, 'live'),
      items: (window) => store.statements.list(companyId, 'live', window),
      async rows(statements) {
        const [context, metrics] = await Promise.all([
          userContext(
            store,
            companyId,
            statements.map((statement) => statement.user_id),
          ),
          store.metrics.list(companyId),
        ])
        return statements.map((statement) => v1StatementRow(statement, userOf(context, statement.user_id), metrics))
      },
    },
    pageUrl(base, path),
    // Both paths list the same statements: one position serves a walk through either.
    { positions, list: `${companyId} statements`, store },
  )
  return { page, successor: await successorUrl(store, companyId, base, 'statement_reporting', null) }
}

/**
 * The live data table a records path names: by its own id (the specification's `{data_table_id}`), or by the id
 * of a live record reporting structure over it (the real documentation's `{table_id}`), with that structure.
 * Anything else, sandbox included, is NotFoundError.
 */
async function liveTableOfPath(
  store: Store,
  companyId: string,
  id: string,
): Promise<{ table: DataTable; structure: ReportingStructure | null }> {
  const structure = await findLiveStructure(store, companyId, id, 'record_reporting')
  const tableId = structure?.data_table_id ?? storedId(id)
  const table = tableId ? await store.dataTables.get(companyId, tableId) : null
  if (!table || table.environment !== 'live') throw new NotFoundError('data_table_id', `No data table with id ${id}`)
  return { table, structure }
}

/**
 * `GET /v1/reporting/{data_table_id}/records`: the commission lines of a live data table, in id (creation) order.
 * The id may also be a record reporting structure's: its table's lines, and the structure as the successor.
 */
export async function listRecordRows(
  store: Store,
  companyId: string,
  tableId: string,
  query: OffsetQuery,
  base: string,
  positions: WalkPositions,
): Promise<DeprecatedPage<V1RecordRow>> {
  const paging = checkOffsetQuery(query)
  const { table, structure } = await liveTableOfPath(store, companyId, tableId)
  const page = await readOffsetPage(
    paging,
    {
      count: () => store.commissionLines.count(companyId, table.id),
      items: (window) => store.commissionLines.list(companyId, table.id, window),
      async rows(lines) {
        const context = await userContext(
          store,
          companyId,
          lines.map((line) => line.user_id),
        )
        const records = await store.records.getMany(companyId, table.id, [...new Set(lines.map((line) => line.record_id))])
        return lines.map((line) => v1RecordRow(line, table, userOf(context, line.user_id), records.get(line.record_id)?.external_id))
      },
    },
    pageUrl(base, `/v1/reporting/${structure?.id ?? table.id}/records`),
    { positions, list: `${companyId} lines ${table.id}`, store },
  )
  const successor = structure
    ? base + rowsPath(structure.type, structure.id)
    : await successorUrl(store, companyId, base, 'record_reporting', table.id)
  return { page, successor }
}
