import { createHash } from 'node:crypto'
import {
  type CustomMetric,
  type DataTable,
  type DataTableField,
  type DataTableFieldType,
  type MetricKind,
  type Quota,
  type QuotaType,
  type ReportingStructure,
  STATEMENT_STATUSES,
} from '../store/model.ts'
import type { CurrenciesInUse, LineCurrenciesInUse } from '../store/port.ts'
import type { FieldDescriptor, FieldSchema, FieldType, PropertyMap } from './schemas.ts'

export type { FieldDescriptor, FieldOrigin, FieldSchema, FieldType, PropertyMap } from './schemas.ts'

/**
 * The v2 field schemas, derived from the stored configuration (structure type, its metric and field keys, metric
 * kinds, data-table field types, quota type and frequency) and from the currencies the rows' amounts are in.
 * Pure: the rows are rendered from the same columns, so the schema and the data cannot disagree.
 */

/** Standard fields exist for every company since the interface does: a fixed date, so the hash never drifts. */
export const STANDARD_FIELDS_CREATED_AT = '2020-01-01T00:00:00.000Z'

const AMOUNT_PROPERTIES: PropertyMap = { value: { type: 'number', required: true }, currency: { type: 'string', required: true } }
/** Both keys are always present in a user reference (`email` may be null), as the real examples say `required: true`. */
const USER_PROPERTIES: PropertyMap = { id: { type: 'string', required: true }, email: { type: 'string', required: true } }
export const BOOLEAN_VALUES = ['true', 'false']
export const QUOTA_VALUE_SOURCES = ['local', 'integration']

/** The shape of one field, without its identity (key, name, origin, creation date). */
type Shape = Pick<FieldDescriptor, 'type' | 'format' | 'currencies' | 'enum_values' | 'properties'>

const shape = (type: FieldType, format: string | null, extra: Partial<Shape> = {}): Shape => ({
  type,
  format,
  currencies: null,
  enum_values: null,
  properties: null,
  ...extra,
})

/** An amount, whose `currencies` are those its values are in (never null: the real examples list them). */
const AMOUNT = (currencies: readonly string[]) =>
  shape('object', 'currency', { currencies: [...currencies], properties: AMOUNT_PROPERTIES })
const USER_REFERENCE = shape('object', 'user_reference', { properties: USER_PROPERTIES })
const ID = shape('string', null)
const DATE = shape('date', 'date')
/** `standard.date` of statements and records: a date string, as the real examples describe it. */
const STANDARD_DATE = shape('string', 'date')

function standard(key: string, name: string, fieldShape: Shape): FieldDescriptor {
  return { api_key: `standard.${key}`, name, origin: 'standard', created_at: STANDARD_FIELDS_CREATED_AT, ...fieldShape }
}

/**
 * A custom metric's shape. An amount metric lists its configured currencies, then any other its values are in: a
 * plan writes a bonus in each user's currency, whatever the metric's configuration says.
 */
function metricShape(metric: Pick<CustomMetric, 'kind' | 'currencies' | 'enum_values'>, currenciesInUse: readonly string[] = []): Shape {
  const shapes: Record<MetricKind, () => Shape> = {
    amount: () => AMOUNT([...new Set([...(metric.currencies ?? []), ...currenciesInUse])]),
    percentage: () => shape('number', 'percentage'),
    float: () => shape('number', 'float'),
    enum: () => shape('string', 'enum', { enum_values: metric.enum_values ?? [] }),
    text: () => shape('string', null),
    date: () => DATE,
  }
  return shapes[metric.kind]()
}

/**
 * A data-table field's shape. The interface has four types: a date-time is served as its UTC date, a boolean
 * as the enum `"true"`/`"false"`, a multi-valued field as one `;`-separated string (its v1 upsert form). An
 * amount lists the currencies its values are in.
 */
function dataTableFieldShape(type: DataTableFieldType, currenciesInUse: readonly string[] = []): Shape {
  const shapes: Record<DataTableFieldType, Shape> = {
    string: shape('string', null),
    number: shape('number', 'float'),
    amount: AMOUNT(currenciesInUse),
    date: DATE,
    datetime: DATE,
    boolean: shape('string', 'enum', { enum_values: BOOLEAN_VALUES }),
    multi: shape('string', null),
  }
  return shapes[type]
}

/** The custom metrics a structure shows, in its order; a key whose metric no longer exists is left out. */
export function shownMetrics(structure: ReportingStructure, metrics: readonly CustomMetric[]): CustomMetric[] {
  const byKey = new Map(metrics.map((metric) => [metric.api_key, metric]))
  return structure.metric_keys.flatMap((key) => byKey.get(key) ?? [])
}

/** The data-table fields a record structure shows, in its order; a key the table no longer has is left out. */
export function shownFields(structure: ReportingStructure, table: DataTable | null): DataTableField[] {
  const byKey = new Map((table?.fields ?? []).map((field) => [field.api_key, field]))
  return structure.field_keys.flatMap((key) => byKey.get(key) ?? [])
}

function customFields(metrics: readonly CustomMetric[], currenciesInUse: CurrenciesInUse['metrics']): FieldDescriptor[] {
  return metrics.map((metric) => ({
    api_key: `custom.${metric.api_key}`,
    name: metric.name,
    origin: 'custom',
    created_at: metric.created_at,
    ...metricShape(metric, currenciesInUse.get(metric.api_key)),
  }))
}

function dataTableFields(fields: readonly DataTableField[], currenciesInUse: LineCurrenciesInUse['recordValues']): FieldDescriptor[] {
  return fields.map((field) => ({
    api_key: `datatable.${field.api_key}`,
    name: field.name,
    origin: 'datatable',
    created_at: field.created_at,
    ...dataTableFieldShape(field.type, currenciesInUse.get(field.api_key)),
  }))
}

/** A statement structure's fields; `currencies`: those of the statements' amounts (`statements.currenciesInUse`). */
export function statementFields(metrics: readonly CustomMetric[], currencies: CurrenciesInUse): FieldDescriptor[] {
  return [
    standard('id', 'Id', ID),
    standard('user', 'User', USER_REFERENCE),
    standard('date', 'Date', STANDARD_DATE),
    standard('total_commission', 'Total commission', AMOUNT(currencies.rows)),
    standard('status', 'Status', shape('string', 'enum', { enum_values: [...STATEMENT_STATUSES] })),
    ...customFields(metrics, currencies.metrics),
  ]
}

/** A record structure's fields; `currencies`: those of its lines' amounts (`commissionLines.currenciesInUse`). */
export function recordFields(
  fields: readonly DataTableField[],
  metrics: readonly CustomMetric[],
  currencies: LineCurrenciesInUse,
): FieldDescriptor[] {
  return [
    standard('id', 'Id', ID),
    standard('user', 'User', USER_REFERENCE),
    standard('commission_impact', 'Commission impact', AMOUNT(currencies.rows)),
    standard('date', 'Date', STANDARD_DATE),
    ...dataTableFields(fields, currencies.recordValues),
    ...customFields(metrics, currencies.metrics),
  ]
}

/** The shape of `standard.value`: an amount quota's values are all in the quota's currency. */
function quotaValueShape(quota: Pick<Quota, 'type' | 'currency'>): Shape {
  if (quota.type === 'amount') return AMOUNT([quota.currency])
  return shape('number', quota.type)
}

export function quotaFields(quota: Pick<Quota, 'type' | 'frequency' | 'currency'>): FieldDescriptor[] {
  return [
    standard('id', 'Id', ID),
    standard('user', 'User', USER_REFERENCE),
    { ...standard('period', 'Period', shape('string', 'period')), frequency: quota.frequency },
    standard('value', 'Value', quotaValueShape(quota)),
    standard('source', 'Source', shape('string', 'enum', { enum_values: QUOTA_VALUE_SOURCES })),
  ]
}

/** JSON with every object's keys sorted, so that equal values always give equal text. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, item]) => item !== undefined)
      .toSorted(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0))
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

/**
 * The schema with its fingerprint: SHA-256 (hex) of the canonical JSON of the descriptors, plus the quota
 * type for a quota. It depends on the configuration and on the currencies amounts are in, nothing else, so it is
 * the same across restarts and adapters.
 */
export function fieldSchema(fields: FieldDescriptor[], quotaType?: QuotaType): FieldSchema {
  const fingerprint = canonicalJson({ fields, quota_type: quotaType ?? null })
  return { schema_hash: createHash('sha256').update(fingerprint).digest('hex'), count: fields.length, fields }
}
