import { type Static, Type } from 'typebox'
import { flatAmount, moneyOf } from '../domain/money.ts'
import { multiText, ownValue } from '../domain/stored-values.ts'
import { NotFoundError } from '../errors.ts'
import type { DataTable, DataTableField, DataTableRecord } from '../store/model.ts'
import type { Store } from '../store/port.ts'
import { checkOffsetQuery, type OffsetPage, type OffsetQuery, pageUrl, readOffsetPage, type WalkPositions } from './offset-page.ts'

/**
 * A data-table record as `GET /v1/tables/{data_table_key}/records` shows it: its keys are the table's field API keys
 * (an amount field `f` with `f_currency` beside it, a multi-valued field as one `;`-separated string, dates
 * YYYY-MM-DD, date-times ISO 8601).
 */
export const V1RecordSchema = Type.Object({}, { additionalProperties: true })
export type V1Record = Static<typeof V1RecordSchema> & Record<string, unknown>

/** Writes one field of a record in its v1 form, the form the upsert accepts. */
function addField(row: V1Record, field: DataTableField, value: unknown): void {
  const key = field.api_key
  switch (field.type) {
    case 'amount':
      for (const [name, item] of flatAmount(key, moneyOf(value, null))) row[name] = item
      return
    case 'multi':
      // One string, as the upsert takes it: a fetched record can be sent back as is.
      row[key] = multiText(value)
      return
    default:
      // Dates are stored YYYY-MM-DD and date-times as ISO 8601 in UTC: both are served as stored.
      row[key] = value ?? null
  }
}

/**
 * A record in its v1 form: every configured field of the table (the id and name fields among them), in
 * configuration order, from the imported values with the manual overrides on top. A field without a value is null.
 */
function v1Record(table: DataTable, record: DataTableRecord): V1Record {
  const values = { ...record.values, ...record.overrides }
  const row: V1Record = {}
  for (const field of table.fields) {
    addField(row, field, field.api_key === table.id_field ? idAsKeyed(field, record) : ownValue(values, field.api_key))
  }
  return row
}

/**
 * The id field's value as its record is keyed. Ids are matched as written (`"007"` and `7` are two records, and an id
 * past 2^53 must not merge with its neighbour), so a number id shows the text it was written as where that is not
 * the number's own: a fetched record sent back then updates that record, not another.
 */
function idAsKeyed(field: DataTableField, record: DataTableRecord): unknown {
  if (field.type !== 'number') return ownValue(record.values, field.api_key)
  const number = Number(record.external_id)
  return String(number) === record.external_id ? number : record.external_id
}

/** The live data table with this key; a sandbox table, or none, is NotFoundError. */
export async function liveTableByKey(store: Store, companyId: string, key: string): Promise<DataTable> {
  const table = await store.dataTables.getByKey(companyId, 'live', key)
  if (!table) throw new NotFoundError('data_table_key', `No data table with key ${key}`)
  return table
}

/** `GET /v1/tables/{data_table_key}/records`: the records of a live data table, in id (creation) order. */
export async function listTableRecords(
  store: Store,
  companyId: string,
  key: string,
  query: OffsetQuery,
  base: string,
  positions: WalkPositions,
): Promise<OffsetPage<V1Record>> {
  const paging = checkOffsetQuery(query)
  const table = await liveTableByKey(store, companyId, key)
  return readOffsetPage(
    paging,
    {
      count: () => store.records.count(companyId, table.id),
      items: (window) => store.records.list(companyId, table.id, window),
      rows: async (records) => records.map((record) => v1Record(table, record)),
    },
    pageUrl(base, `/v1/tables/${encodeURIComponent(key)}/records`),
    { positions, list: `${companyId} ${table.id}`, store },
  )
}
