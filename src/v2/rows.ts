import { parseInstant } from '../domain/formats.ts'
import type {
  CommissionLine,
  CustomMetric,
  DataTableField,
  DataTableFieldType,
  MetricKind,
  Money,
  Quota,
  QuotaValue,
} from '../store/model.ts'
import type { StatementRowFields } from '../store/port.ts'

/**
 * The v2 rows: flat objects whose keys are exactly the `api_key`s of the structure's field schema
 * (`field-schema.ts`), built from the same columns. A value the row does not hold is null, never absent.
 * Values written before a metric's kind or a field's type changed are converted when they can be, else null.
 */

export type Row = Record<string, unknown>
export interface UserReference {
  id: string
  email: string | null
}
/** Emails of the users a page names, by user id; a user that no longer exists is missing. */
export type Emails = ReadonlyMap<string, string>

const userReference = (userId: string, emails: Emails): UserReference => ({ id: userId, email: emails.get(userId) ?? null })

function amountOf(raw: unknown, currency: string): Money | null {
  if (typeof raw === 'number') return { value: raw, currency }
  if (raw !== null && typeof raw === 'object' && typeof (raw as Money).value === 'number') {
    const amount = raw as Money
    return { value: amount.value, currency: typeof amount.currency === 'string' ? amount.currency : currency }
  }
  return null
}

function numberOf(raw: unknown): number | null {
  if (typeof raw === 'number') return raw
  return amountOf(raw, '')?.value ?? null
}

function textOf(raw: unknown): string | null {
  if (typeof raw === 'string') return raw
  return typeof raw === 'number' || typeof raw === 'boolean' ? String(raw) : null
}

/** YYYY-MM-DD: a date as is, a date-time as its UTC date (one without an offset is UTC, whatever the process's time zone). */
function dateOf(raw: unknown): string | null {
  if (typeof raw !== 'string' || !/^\d{4}-\d{2}-\d{2}/.test(raw)) return null
  if (raw.length === 10) return raw
  return parseInstant(raw)?.toISOString().slice(0, 10) ?? null
}

/** A custom metric's value; an amount without its own currency takes the row's. */
export function metricValue(kind: MetricKind, raw: unknown, rowCurrency: string): unknown {
  switch (kind) {
    case 'amount':
      return amountOf(raw, rowCurrency)
    case 'percentage':
    case 'float':
      return numberOf(raw)
    case 'enum':
    case 'text':
      return textOf(raw)
    case 'date':
      return dateOf(raw)
  }
}

/** A data-table value as stored (amounts as objects, multi-valued fields as arrays, date-times as ISO UTC). */
export function dataTableValue(type: DataTableFieldType, raw: unknown): unknown {
  switch (type) {
    case 'string':
      return Array.isArray(raw) ? raw.join(';') : textOf(raw)
    case 'number':
      return numberOf(raw)
    case 'amount':
      return raw !== null && typeof raw === 'object' ? amountOf(raw, '') : null
    case 'date':
    case 'datetime':
      return dateOf(raw)
    case 'boolean':
      return typeof raw === 'boolean' ? String(raw) : raw === 'true' || raw === 'false' ? raw : null
    case 'multi':
      return Array.isArray(raw) ? raw.join(';') : textOf(raw)
  }
}

interface MetricColumn {
  key: string
  source: string
  kind: MetricKind
}
interface FieldColumn {
  key: string
  source: string
  type: DataTableFieldType
}

const metricColumns = (metrics: readonly CustomMetric[]): MetricColumn[] =>
  metrics.map((metric) => ({ key: `custom.${metric.api_key}`, source: metric.api_key, kind: metric.kind }))

function addMetrics(row: Row, columns: readonly MetricColumn[], values: Record<string, unknown>, currency: string): Row {
  for (const column of columns) row[column.key] = metricValue(column.kind, values[column.source], currency)
  return row
}

/**
 * Renders statements (statement-texts.ts stores them as text): `standard.total_commission` is the payment in the
 * statement's currency; `email` is the user's, null for a user that does not exist.
 */
export function statementRenderer(metrics: readonly CustomMetric[]): (statement: StatementRowFields, email: string | null) => Row {
  const columns = metricColumns(metrics)
  return (statement, email) =>
    addMetrics(
      {
        'standard.id': statement.id,
        'standard.user': { id: statement.user_id, email },
        'standard.date': statement.date,
        'standard.total_commission': statement.payment === null ? null : { value: statement.payment, currency: statement.currency },
        'standard.status': statement.status,
      },
      columns,
      statement.metrics,
      statement.currency,
    )
}

/** Renders commission lines: data-table values are those the line was calculated with. */
export function recordRenderer(fields: readonly DataTableField[], metrics: readonly CustomMetric[]): (line: CommissionLine, emails: Emails) => Row {
  const fieldColumns: FieldColumn[] = fields.map((field) => ({ key: `datatable.${field.api_key}`, source: field.api_key, type: field.type }))
  const columns = metricColumns(metrics)
  return (line, emails) => {
    const row: Row = {
      'standard.id': line.id,
      'standard.user': userReference(line.user_id, emails),
      'standard.commission_impact': { value: line.commission, currency: line.currency },
      'standard.date': line.date,
    }
    for (const column of fieldColumns) row[column.key] = dataTableValue(column.type, line.record_values[column.source])
    return addMetrics(row, columns, line.metrics, line.currency)
  }
}

/** Renders quota values: the five keys, `standard.value` by the quota's type at read time. */
export function quotaValueRenderer(quota: Pick<Quota, 'type' | 'currency'>): (value: QuotaValue, emails: Emails) => Row {
  const render = quota.type === 'amount' ? (value: number) => ({ value, currency: quota.currency }) : (value: number) => value
  return (value, emails) => ({
    'standard.id': value.id,
    'standard.user': userReference(value.user_id, emails),
    'standard.period': value.period,
    'standard.value': render(value.value),
    'standard.source': value.source,
  })
}
