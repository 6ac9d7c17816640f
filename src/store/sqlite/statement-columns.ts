import type { CellSums, Statement, StatementStatus } from '../model.ts'
import type { StatementRowFields } from '../port.ts'
import type { Params, Values } from './connection.ts'
import { insertsInto, parseObject } from './queries.ts'

/**
 * Statements are kept column by column rather than as a JSON document (commission lines too: line-columns.ts): the
 * v2 extraction reads them by the thousand, and reading columns as arrays costs a fraction of parsing a document
 * per row (docs/performance.md). Metrics and dimensions, whose keys are the company's, stay JSON.
 */
export const STATEMENT_COLUMNS =
  'company_id, environment, id, modified_at, user_id, date, plan, status, currency, payment, target, target_achievement, on_target_earning, achievement, metrics, dimensions, plan_id, period, sums'

/** Statements are keyed by (company, environment, id): naming both environments keeps a lookup by id a seek. */
export const STATEMENT_BY_ID = "company_id = ? AND environment IN ('live', 'sandbox') AND id"

/** Inserts a statement, and replaces the statement with the same (company, environment, id). */
export const { insert: INSERT_STATEMENT, replace: REPLACE_STATEMENT } = insertsInto('statements', STATEMENT_COLUMNS)

export function statementParams(statement: Statement): Params {
  return [
    statement.company_id,
    statement.environment,
    statement.id,
    statement.modified_at,
    statement.user_id,
    statement.date,
    statement.plan,
    statement.status,
    statement.currency,
    statement.payment,
    statement.target,
    statement.target_achievement,
    statement.on_target_earning,
    statement.achievement,
    JSON.stringify(statement.metrics),
    JSON.stringify(statement.dimensions),
    statement.plan_id,
    statement.period,
    statement.sums ? JSON.stringify(statement.sums) : null,
  ]
}

/** A statement from the values of `SELECT ${STATEMENT_COLUMNS}`. */
export function statementFromValues(values: Values): Statement {
  return {
    id: values[2] as string,
    company_id: values[0] as string,
    environment: values[1] as Statement['environment'],
    user_id: values[4] as string,
    date: values[5] as string,
    plan: values[6] as string,
    status: values[7] as StatementStatus,
    currency: values[8] as string,
    payment: values[9] as number | null,
    target: values[10] as number | null,
    target_achievement: values[11] as number | null,
    on_target_earning: values[12] as number | null,
    achievement: values[13] as number | null,
    metrics: parseObject(values[14]) as Record<string, unknown>,
    dimensions: parseObject(values[15]) as Record<string, string[]>,
    plan_id: values[16] as string | null,
    period: values[17] as string | null,
    modified_at: values[3] as string,
    ...(values[18] === null ? {} : { sums: JSON.parse(values[18] as string) as CellSums }),
  }
}

/**
 * The columns of `StatementRowFields`, what a v2 row is rendered from (`statements.pageToRender`, and
 * `pageForExtraction` for statements without a rendering): 7 columns instead of 19, one JSON column to parse.
 */
export const ROW_FIELD_COLUMNS = 'id, user_id, date, status, currency, payment, metrics'

/** A statement's row fields from the values of `SELECT ${ROW_FIELD_COLUMNS}`. */
export function rowFieldsFromValues(values: Values): StatementRowFields {
  return {
    id: values[0] as string,
    user_id: values[1] as string,
    date: values[2] as string,
    status: values[3] as StatementStatus,
    currency: values[4] as string,
    payment: values[5] as number | null,
    metrics: parseObject(values[6]) as Record<string, unknown>,
  }
}

/** A statement's id and its rendering when it holds one for the key ?1, else NULL (`statements.pageForExtraction`). */
export const RENDERED_STATEMENT_COLUMNS = 'id, CASE WHEN rendering_key = ?1 THEN rendering END'
