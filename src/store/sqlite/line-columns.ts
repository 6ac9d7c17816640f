import type { CommissionLine, Environment } from '../model.ts'
import type { Params, Values } from './connection.ts'
import { insertsInto, parseObject } from './queries.ts'

/**
 * Commission lines are kept column by column, as statements are (statement-columns.ts): a document repeated
 * every id its columns hold, so a line took twice the bytes it does now, and a calculation writes them by the
 * hundred thousand (docs/performance.md). The record's values and the metrics, whose keys are the company's,
 * stay JSON.
 */
export const LINE_COLUMNS =
  'company_id, table_id, id, modified_at, environment, record_id, user_id, plan, date, commission, currency, metrics, record_values, plan_id, period'

/** Lines are keyed by (company, table, id): naming the company's tables keeps a lookup by id a seek. */
export const LINE_BY_ID = 'company_id = ? AND table_id IN (SELECT id FROM data_tables WHERE company_id = ?) AND id'

/** Inserts a line (one with the same (company, table, id) is a conflict), and replaces the line with the same key. */
export const { insert: INSERT_LINE, replace: REPLACE_LINE } = insertsInto('commission_lines', LINE_COLUMNS)

export function lineParams(line: CommissionLine): Params {
  return [
    line.company_id,
    line.table_id,
    line.id,
    line.modified_at,
    line.environment,
    line.record_id,
    line.user_id,
    line.plan,
    line.date,
    line.commission,
    line.currency,
    JSON.stringify(line.metrics),
    JSON.stringify(line.record_values),
    line.plan_id,
    line.period,
  ]
}

/** A line from the values of `SELECT ${LINE_COLUMNS}`. */
export function lineFromValues(values: Values): CommissionLine {
  return {
    id: values[2] as string,
    company_id: values[0] as string,
    environment: values[4] as Environment,
    table_id: values[1] as string,
    record_id: values[5] as string,
    user_id: values[6] as string,
    plan: values[7] as string,
    date: values[8] as string,
    commission: values[9] as number,
    currency: values[10] as string,
    record_values: JSON.parse(values[12] as string) as Record<string, unknown>,
    metrics: parseObject(values[11]),
    plan_id: values[13] as string | null,
    period: values[14] as string | null,
    modified_at: values[3] as string,
  }
}
