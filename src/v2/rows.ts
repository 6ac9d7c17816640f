import { dataTableValue, metricValue, type MetricShape } from '../domain/stored-values.ts'
import type { CommissionLine, CustomMetric, DataTableField, DataTableFieldType, Quota, QuotaValue } from '../store/model.ts'
import type { StatementRowFields } from '../store/port.ts'
import type { Static } from 'typebox'
import type { QuotaValueRow, Row, UserReferenceSchema } from './schemas.ts'

export type { Row } from './schemas.ts'

/**
 * The v2 rows: flat objects whose keys are exactly the `api_key`s of the structure's field schema
 * (`field-schema.ts`), built from the same columns. A value the row does not hold is null, never absent.
 * Values written before a metric's kind or a field's type changed are converted when they can be, else null
 * (src/domain/stored-values.ts).
 */

export type UserReference = Static<typeof UserReferenceSchema>
/** Emails of the users a page names, by user id; a user that no longer exists is missing. */
export type Emails = ReadonlyMap<string, string>

const userReference = (userId: string, emails: Emails): UserReference => ({ id: userId, email: emails.get(userId) ?? null })

interface MetricColumn {
  key: string
  source: string
  metric: MetricShape
}
interface FieldColumn {
  key: string
  source: string
  type: DataTableFieldType
}

const metricColumns = (metrics: readonly CustomMetric[]): MetricColumn[] =>
  metrics.map((metric) => ({ key: `custom.${metric.api_key}`, source: metric.api_key, metric }))

function addMetrics(row: Row, columns: readonly MetricColumn[], values: Record<string, unknown>, currency: string): Row {
  for (const column of columns) row[column.key] = metricValue(column.metric, values[column.source], currency)
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
export function recordRenderer(
  fields: readonly DataTableField[],
  metrics: readonly CustomMetric[],
): (line: CommissionLine, emails: Emails) => Row {
  const fieldColumns: FieldColumn[] = fields.map((field) => ({
    key: `datatable.${field.api_key}`,
    source: field.api_key,
    type: field.type,
  }))
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
export function quotaValueRenderer(quota: Pick<Quota, 'type' | 'currency'>): (value: QuotaValue, emails: Emails) => QuotaValueRow {
  const render = quota.type === 'amount' ? (value: number) => ({ value, currency: quota.currency }) : (value: number) => value
  return (value, emails) => ({
    'standard.id': value.id,
    'standard.user': userReference(value.user_id, emails),
    'standard.period': value.period,
    'standard.value': render(value.value),
    'standard.source': value.source,
  })
}
