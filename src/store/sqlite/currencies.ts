import type { Environment } from '../model.ts'
import type { CurrenciesInUse, LineCurrenciesInUse } from '../port.ts'
import { currencyListsByKey } from '../shared/currency-lists.ts'
import type { Sql, Values } from './connection.ts'

/**
 * The currencies in use among rows (`statements.currenciesInUse`, `commissionLines.currenciesInUse`): DISTINCT
 * over the rows of an environment or a table, and over the entries of their JSON maps with `json_each`. Each
 * query reads every one of those rows once; the v2 fields endpoint, the only caller, is read once per sync, not per page, and the
 * adapter remembers the answers until the database changes (`Sql.remembering`).
 */

const NUMBER = `('integer', 'real')`

/** The JSON type at `path` in a map entry's value; CASE, because only an object entry's value is JSON text (json_type() of a plain string is an error). */
const inObject = (path: string) => `CASE WHEN entry.type = 'object' THEN json_type(entry.value, '${path}') END`

/**
 * `(key, currency)` of the amount entries of the JSON map `map` of rows whose own currency is `rowCurrency`: an
 * object with a numeric `value` in its text `currency` (else, when `numbersInRowCurrency`, the row's), and with
 * `numbersInRowCurrency` a plain number in the row's.
 */
function entryCurrencies(map: string, rowCurrency: string, numbersInRowCurrency: boolean): { select: string; where: string } {
  const own = `${inObject('$.currency')} = 'text'`
  const amount = `${inObject('$.value')} IN ${NUMBER}`
  if (!numbersInRowCurrency) {
    return { select: `entry.key, entry.value ->> '$.currency'`, where: `json_each(${map}) AS entry WHERE ${amount} AND ${own}` }
  }
  return {
    select: `entry.key, CASE WHEN ${own} THEN entry.value ->> '$.currency' ELSE ${rowCurrency} END`,
    where: `json_each(${map}) AS entry WHERE (${amount} OR entry.type IN ${NUMBER})`,
  }
}

/** `[key, currency]` rows as sorted lists by key. */
const byKey = (rows: Values[]) => currencyListsByKey(rows.map(([key, currency]) => [key as string, currency as string]))

const sorted = (rows: Values[]) => rows.map((row) => row[0] as string).toSorted()

export async function statementCurrencies(sql: Pick<Sql, 'values'>, companyId: string, environment: Environment): Promise<CurrenciesInUse> {
  const ofEnvironment = 'statements.company_id = ? AND statements.environment = ?'
  const metrics = entryCurrencies('statements.metrics', 'statements.currency', true)
  const [rows, entries] = await Promise.all([
    sql.values(`SELECT DISTINCT currency FROM statements WHERE ${ofEnvironment} AND payment IS NOT NULL`, companyId, environment),
    sql.values(`SELECT DISTINCT ${metrics.select} FROM statements, ${metrics.where} AND ${ofEnvironment}`, companyId, environment),
  ])
  return { rows: sorted(rows), metrics: byKey(entries) }
}

export async function lineCurrencies(sql: Pick<Sql, 'values'>, companyId: string, tableId: string): Promise<LineCurrenciesInUse> {
  const ofTable = 'lines.company_id = ? AND lines.table_id = ?'
  const currency = 'lines.currency'
  const metrics = entryCurrencies('lines.metrics', currency, true)
  const values = entryCurrencies('lines.record_values', currency, false)
  const [rows, metricEntries, valueEntries] = await Promise.all([
    sql.values(`SELECT DISTINCT ${currency} FROM commission_lines AS lines WHERE ${ofTable}`, companyId, tableId),
    sql.values(`SELECT DISTINCT ${metrics.select} FROM commission_lines AS lines, ${metrics.where} AND ${ofTable}`, companyId, tableId),
    sql.values(`SELECT DISTINCT ${values.select} FROM commission_lines AS lines, ${values.where} AND ${ofTable}`, companyId, tableId),
  ])
  return { rows: sorted(rows), metrics: byKey(metricEntries), recordValues: byKey(valueEntries) }
}
