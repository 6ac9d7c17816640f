import type { CustomMetric, DataTableFieldType } from '../store/model.ts'
import { parseInstant } from './formats.ts'
import { moneyOf, numberOf } from './money.ts'
import { joinMulti } from './record-values.ts'

/**
 * Stored values read as what shows them now. A custom metric's kind can change after its values were written
 * (docs/decisions.md): a value is converted when it can be, else it is null. Both API versions read values
 * through these functions, so that they show the same figure for the same stored value.
 */

/**
 * The value a stored map (values, attributes, metrics) holds under an API key; undefined when it holds none. Its
 * own only: a company may name a key like an Object.prototype member (`valueOf`), which the map would inherit.
 */
export function ownValue(map: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(map, key) ? map[key] : undefined
}

/** A string; a number or a boolean as its text. */
export function textOf(raw: unknown): string | null {
  if (typeof raw === 'string') return raw
  return typeof raw === 'number' || typeof raw === 'boolean' ? String(raw) : null
}

/** YYYY-MM-DD: a date as is, a date-time as its UTC date (one without an offset is UTC, whatever the process's time zone). */
export function dateOf(raw: unknown): string | null {
  if (typeof raw !== 'string' || !/^\d{4}-\d{2}-\d{2}/.test(raw)) return null
  if (raw.length === 10) return raw
  return parseInstant(raw)?.toISOString().slice(0, 10) ?? null
}

/**
 * YYYY-MM-DD: the date of a data-table date or date-time field's value, which the store holds checked (a date,
 * or a date-time in ISO 8601 UTC, `parseRecord`): its first ten characters, without parsing it again, since the
 * calculation reads it for every record it places.
 */
export function recordDateOf(raw: unknown): string | null {
  return typeof raw === 'string' && /^\d{4}-\d{2}-\d{2}/.test(raw) ? raw.slice(0, 10) : null
}

/** A multi-valued field as one string, its values joined as the v1 upsert takes them; any other value as text. */
export function multiText(raw: unknown): string | null {
  return Array.isArray(raw) ? joinMulti(raw) : textOf(raw)
}

/** What reading a metric's value needs of its definition. */
export type MetricShape = Pick<CustomMetric, 'kind' | 'enum_values'>

/**
 * A custom metric's value by its kind; an amount without its own currency takes the row's. An enum's value is one
 * of its allowed values or null: a value written before the metric became an enum, or before its values were
 * narrowed, is not one the field schema lists.
 */
export function metricValue(metric: MetricShape, raw: unknown, rowCurrency: string): unknown {
  switch (metric.kind) {
    case 'amount':
      return moneyOf(raw, rowCurrency)
    case 'percentage':
    case 'float':
      return numberOf(raw)
    case 'enum':
      return allowedText(textOf(raw), metric.enum_values)
    case 'text':
      return textOf(raw)
    case 'date':
      return dateOf(raw)
  }
}

const allowedText = (text: string | null, allowed: readonly string[] | null): string | null =>
  text === null || allowed === null || allowed.includes(text) ? text : null

/**
 * Each data-table type's value in its v2 form, from its stored form (amounts as objects, multi-valued fields as
 * arrays, date-times as ISO UTC): a date-time as its UTC date, a boolean as `"true"`/`"false"`, a multi-valued
 * field as one string.
 */
const DATA_TABLE_VALUES: Record<DataTableFieldType, (raw: unknown) => unknown> = {
  string: multiText,
  multi: multiText,
  number: numberOf,
  amount: (raw) => moneyOf(raw, null),
  date: dateOf,
  datetime: dateOf,
  boolean: (raw) => (typeof raw === 'boolean' ? String(raw) : raw === 'true' || raw === 'false' ? raw : null),
}

/** A data-table value in its v2 form (`datatable.*`, and the deprecated v1 reads' `record.name`), from its stored form. */
export function dataTableValue(type: DataTableFieldType, raw: unknown): unknown {
  return DATA_TABLE_VALUES[type](raw)
}
