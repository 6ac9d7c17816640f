import type { Document } from 'bson'
import type { CurrenciesInUse, LineCurrenciesInUse } from '../port.ts'
import { currencyListsByKey } from '../shared/currency-lists.ts'
import type { Codec } from './codec.ts'
import { collectionOf, inSession, type MongoContext, read } from './context.ts'

/**
 * The currencies in use among rows (`statements.currenciesInUse`, `commissionLines.currenciesInUse`): `distinct`
 * over the rows' own currency, and an aggregation over the entries of one of their maps. Each reads every row of
 * the environment or table once; the v2 fields endpoint, the only caller, is read once per sync, not per page.
 */

const NUMBER_TYPES = ['double', 'int', 'long', 'decimal']

const isNumber = (path: string): Document => ({ $in: [{ $type: path }, NUMBER_TYPES] })
const isObject = (path: string): Document => ({ $eq: [{ $type: path }, 'object'] })

/**
 * The currency of a map entry `$entry.v` (the row's own is `$currency`): an object with a numeric `value` is in
 * its string `currency`, else (with `numbersInRowCurrency`) in the row's; with `numbersInRowCurrency` a plain
 * number is in the row's. Anything else: null.
 */
function entryCurrency(numbersInRowCurrency: boolean): Document {
  const rowCurrency = numbersInRowCurrency ? '$currency' : null
  const ownCurrency = { $cond: [{ $eq: [{ $type: '$entry.v.currency' }, 'string'] }, '$entry.v.currency', rowCurrency] }
  const ofNumber = numbersInRowCurrency ? { $cond: [isNumber('$entry.v'), rowCurrency, null] } : null
  return { $cond: [{ $and: [isObject('$entry.v'), isNumber('$entry.v.value')] }, ownCurrency, ofNumber] }
}

/** By key of the map `field`, the sorted currencies of its entries. */
async function mapCurrencies(
  context: MongoContext,
  codec: Codec,
  filter: Document,
  field: string,
  numbersInRowCurrency: boolean,
): Promise<Map<string, string[]>> {
  const pipeline: Document[] = [
    { $match: filter },
    { $project: { currency: 1, entry: { $objectToArray: { $ifNull: [`$${field}`, {}] } } } },
    { $unwind: '$entry' },
    { $project: { key: '$entry.k', currency: entryCurrency(numbersInRowCurrency) } },
    { $match: { currency: { $type: 'string' } } },
    { $group: { _id: { key: '$key', currency: '$currency' } } },
  ]
  const groups = await read(context, (session) => collectionOf(context, codec).aggregate(pipeline, inSession(session)).toArray())
  return currencyListsByKey(groups.map(({ _id }) => [_id.key as string, _id.currency as string]))
}

async function rowCurrencies(context: MongoContext, codec: Codec, filter: Document): Promise<string[]> {
  const values = await read(context, (session) => collectionOf(context, codec).distinct('currency', filter, inSession(session)))
  return values.filter((value): value is string => typeof value === 'string').toSorted()
}

/** Statements: the currencies of those with a payment, and of their metrics. */
export async function statementCurrencies(context: MongoContext, codec: Codec, filter: Document): Promise<CurrenciesInUse> {
  const [rows, metrics] = await Promise.all([
    rowCurrencies(context, codec, { ...filter, payment: { $ne: null } }),
    mapCurrencies(context, codec, filter, 'metrics', true),
  ])
  return { rows, metrics }
}

/** Commission lines: the currencies of the lines, of their metrics and of the amounts of their record values. */
export async function lineCurrencies(context: MongoContext, codec: Codec, filter: Document): Promise<LineCurrenciesInUse> {
  const [rows, metrics, recordValues] = await Promise.all([
    rowCurrencies(context, codec, filter),
    mapCurrencies(context, codec, filter, 'metrics', true),
    mapCurrencies(context, codec, filter, 'record_values', false),
  ])
  return { rows, metrics, recordValues }
}
