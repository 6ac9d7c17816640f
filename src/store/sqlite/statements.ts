import type { Environment, Statement } from '../model.ts'
import type { RowWindow, StatementRowSource, StatementRepository } from '../port.ts'
import type { Params, Sql, Values } from './connection.ts'
import { statementCurrencies } from './currencies.ts'
import { countOf, offsetWindow, pageClause, placeholders, planResultConditions, slices } from './queries.ts'
import {
  ROW_FIELD_COLUMNS,
  rowFieldsFromValues,
  INSERT_STATEMENT,
  RENDERED_STATEMENT_COLUMNS,
  REPLACE_STATEMENT,
  STATEMENT_BY_ID,
  STATEMENT_COLUMNS,
  statementFromValues,
  statementParams,
} from './statement-columns.ts'

const DELETE_FROM_ENVIRONMENT = 'DELETE FROM statements WHERE company_id = ? AND environment = ? AND id = ?'
const OTHER_ENVIRONMENT: Record<Environment, Environment> = { live: 'sandbox', sandbox: 'live' }

/**
 * Statements, kept column by column (`statement-columns.ts`), each with the rendering of its v2 row when it holds
 * one. The plans' results are found by cell (plan, user, period) through the partial index of migration 5.
 */
export function sqliteStatements(sql: Sql): StatementRepository {
  return {
    async insertMany(statements) {
      await sql.write((db) => {
        for (const statement of statements) db.run(INSERT_STATEMENT, ...statementParams(statement))
      })
    },
    async page(companyId, environment, window) {
      const query = statementQuery(STATEMENT_COLUMNS, companyId, environment, window)
      return (await sql.values(query.sql, ...query.params)).map(statementFromValues)
    },
    pageForExtraction: (companyId, environment, window, renderingKey) =>
      statementsForExtraction(sql, companyId, environment, window, renderingKey),
    async pageToRender(companyId, environment, renderingKey, afterId, limit) {
      const rows = await sql.values(
        `SELECT ${ROW_FIELD_COLUMNS} FROM statements
         WHERE company_id = ? AND environment = ? AND id > ? AND rendering_key IS NOT ? ORDER BY id LIMIT ?`,
        companyId,
        environment,
        afterId ?? '',
        renderingKey,
        limit,
      )
      return rows.map(rowFieldsFromValues)
    },
    async saveRenderings(companyId, environment, renderings) {
      await sql.write((db) => {
        for (const { id, key, text } of renderings) {
          db.run(
            'UPDATE statements SET rendering_key = ?, rendering = ? WHERE company_id = ? AND environment = ? AND id = ?',
            key,
            text,
            companyId,
            environment,
            id,
          )
        }
      })
    },
    // The offset window walks the primary key (company, environment, id) in order: no sort, and no row past the window is read.
    async list(companyId, environment, window) {
      const query = offsetWindow(
        `SELECT ${STATEMENT_COLUMNS} FROM statements`,
        'company_id = ? AND environment = ?',
        [companyId, environment],
        window,
      )
      return (await sql.values(query.sql, ...query.params)).map(statementFromValues)
    },
    async count(companyId, environment) {
      return countOf(
        await sql.remembering.get('SELECT count(*) AS n FROM statements WHERE company_id = ? AND environment = ?', companyId, environment),
      )
    },
    currenciesInUse: (companyId, environment) => statementCurrencies(sql.remembering, companyId, environment),
    async save(statements) {
      // REPLACE deletes the stored row and inserts the new one: its rendering goes with it, as the port says. The
      // environment is part of the key, so a statement saved in the other one (its plan moved there) would otherwise
      // stay where it was as well, served there under the same id.
      await sql.write((db) => {
        for (const statement of statements) {
          // Naming the other environment makes it one seek of the primary key, where `<>` made two: half the cost.
          db.run(DELETE_FROM_ENVIRONMENT, statement.company_id, OTHER_ENVIRONMENT[statement.environment], statement.id)
          db.run(REPLACE_STATEMENT, ...statementParams(statement))
        }
      })
    },
    async deleteMany(companyId, ids) {
      await sql.write((db) => {
        for (const slice of slices(ids))
          db.run(`DELETE FROM statements WHERE ${STATEMENT_BY_ID} IN (${placeholders(slice)})`, companyId, ...slice)
      })
    },
    async findOfPlan(companyId, planId, only) {
      const found: Statement[] = []
      for (const condition of planResultConditions(only)) {
        const rows = await sql.values(
          `SELECT ${STATEMENT_COLUMNS} FROM statements INDEXED BY statements_plan_cell
           WHERE company_id = ? AND plan_id = ?${condition.sql} ORDER BY id`,
          companyId,
          planId,
          ...condition.params,
        )
        for (const row of rows) found.push(statementFromValues(row))
      }
      return found
    },
    // No index names a plan: a scan of the company's statements, for an admin call that recalculates a whole plan anyway.
    async planIdsNamed(companyId, environment, planName) {
      const rows = await sql.values(
        `SELECT DISTINCT plan_id FROM statements
         WHERE company_id = ? AND environment = ? AND plan = ? AND plan_id IS NOT NULL ORDER BY plan_id`,
        companyId,
        environment,
        planName,
      )
      return rows.map(([planId]) => planId as string)
    },

    async loadedNamed(companyId, environment, planName) {
      const query = 'SELECT 1 AS found FROM statements WHERE company_id = ? AND environment = ? AND plan = ? AND plan_id IS NULL LIMIT 1'
      return (await sql.get(query, companyId, environment, planName)) !== undefined
    },
  }
}

/**
 * The query of the given columns of the statements of one environment in an id-ordered window.
 * `columnParams` are the parameters the columns name, numbered from ?1.
 */
function statementQuery(columns: string, companyId: string, environment: Environment, window: RowWindow, columnParams: Params = []) {
  const clause = pageClause(window)
  return {
    sql: `SELECT ${columns} FROM statements WHERE company_id = ? AND environment = ?${clause.sql}`,
    params: [...columnParams, companyId, environment, ...clause.params],
  }
}

/**
 * The extraction's page: each statement's rendering for `renderingKey` (two values a row), and, when some hold
 * none, the fields of the same window read again on the same snapshot, so that both reads give the same rows in
 * the same order. Reading every row's fields, as NULLs where a rendering is used, costs a third more on a page
 * that is all rendered.
 */
function statementsForExtraction(sql: Sql, companyId: string, environment: Environment, window: RowWindow, renderingKey: string) {
  return sql.snapshot((db): StatementRowSource[] => {
    const rendered = statementQuery(RENDERED_STATEMENT_COLUMNS, companyId, environment, window, [renderingKey])
    const rows = db.values(rendered.sql, ...rendered.params)
    if (rows.every((row) => row[1] !== null)) return rows.map(renderedRow)
    const unrendered = statementQuery(ROW_FIELD_COLUMNS, companyId, environment, window)
    const fields = db.values(unrendered.sql, ...unrendered.params)
    return rows.map((row, index) => (row[1] === null ? { ...rowFieldsFromValues(fields[index]), rendering: null } : renderedRow(row)))
  })
}

const renderedRow = (row: Values): StatementRowSource => ({ id: row[0] as string, rendering: row[1] as string })
