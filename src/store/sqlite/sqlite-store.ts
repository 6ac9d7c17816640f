import type {
  ApiKey,
  CommissionLine,
  Company,
  CustomMetric,
  DataTable,
  DataTableRecord,
  Environment,
  GroupAttribution,
  ManagerAttribution,
  Quota,
  QuotaValue,
  ReportingStructure,
  Statement,
  User,
  UserAttributeDefinition,
} from '../model.ts'
import type { RowWindow, StatementForExtraction, Store } from '../port.ts'
import { type Params, type Row, type Sql, SqliteConnection, type Values } from './connection.ts'
import { sqliteClockOffset } from './clock-offset.ts'
import { sqliteCompanyOrigins } from './company-origins.ts'
import { lineCurrencies, statementCurrencies } from './currencies.ts'
import { sqliteImports } from './imports.ts'
import { COMPANY_TABLES } from './migrations.ts'
import { sqliteImportStatistics } from './import-statistics.ts'
import { sqliteOpenError } from './open-errors.ts'
import { rateLimitFile, SqliteRateLimits } from './rate-limits.ts'
import { placeholders, slices, sqliteRecordWrites } from './record-writes.ts'
import { insertLines, sqliteLineResults, sqlitePlans, sqliteStatementResults } from './calculation-results.ts'
import { sqliteAdminEdits } from './admin-edits.ts'
import {
  EXTRACTED_STATEMENT_COLUMNS,
  extractedStatementFromValues,
  INSERT_STATEMENT,
  STATEMENT_COLUMNS,
  RENDERED_STATEMENT_COLUMNS,
  statementFromValues,
  statementParams,
} from './statement-rows.ts'
import { listCommissionLines, listStatements } from './offset-lists.ts'

/** Opens (and migrates) the SQLite store at `path`, a file or `:memory:`. */
export function openSqliteStore(path: string): Store {
  let connection: SqliteConnection | null = null
  try {
    connection = new SqliteConnection(path)
    return sqliteStore(connection, connection.sql, new SqliteRateLimits(rateLimitFile(path)))
  } catch (error) {
    connection?.close()
    throw sqliteOpenError(path, error)
  }
}

function parse<T>(row: Row | undefined): T | null {
  return row ? (JSON.parse(row.doc as string) as T) : null
}

function parseAll<T>(rows: Row[]): T[] {
  return rows.map((row) => JSON.parse(row.doc as string) as T)
}

function countOf(row: Row | undefined): number {
  return Number(row?.n ?? 0)
}

function inClause(values: readonly unknown[]): string {
  return values.map(() => '?').join(', ')
}

/** The WHERE conditions and ORDER/LIMIT of an id-ordered page. */
function pageClause(window: RowWindow): { sql: string; params: Params } {
  const conditions: string[] = []
  const params: Params = []
  if (window.afterId !== undefined) {
    conditions.push('id > ?')
    params.push(window.afterId)
  }
  if (window.modifiedAfter) {
    conditions.push(`modified_at ${window.modifiedAfter.inclusive ? '>=' : '>'} ?`)
    params.push(window.modifiedAfter.at)
  }
  if (window.modifiedBefore) {
    conditions.push(`modified_at ${window.modifiedBefore.inclusive ? '<=' : '<'} ?`)
    params.push(window.modifiedBefore.at)
  }
  const where = conditions.map((condition) => ` AND ${condition}`).join('')
  params.push(window.limit)
  return { sql: `${where} ORDER BY id LIMIT ?`, params }
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

/** The given columns of the statements of one environment in an id-ordered window, as arrays of values. */
function statementValues(sql: Sql, columns: string, companyId: string, environment: Environment, window: RowWindow): Promise<Values[]> {
  const query = statementQuery(columns, companyId, environment, window)
  return sql.values(query.sql, ...query.params)
}

/**
 * The extraction's page: each statement's rendering for `renderingKey` (two values a row), and, when some hold
 * none, the fields of the same window read again on the same snapshot, so that both reads give the same rows in
 * the same order. Reading every row's fields, as NULLs where a rendering is used, costs a third more on a page
 * that is all rendered.
 */
function statementsForExtraction(sql: Sql, companyId: string, environment: Environment, window: RowWindow, renderingKey: string) {
  return sql.snapshot((db): StatementForExtraction[] => {
    const rendered = statementQuery(RENDERED_STATEMENT_COLUMNS, companyId, environment, window, [renderingKey])
    const rows = db.values(rendered.sql, ...rendered.params)
    if (rows.every((row) => row[1] !== null)) return rows.map((row) => ({ id: row[0] as string, rendering: row[1] as string }))
    const unrendered = statementQuery(EXTRACTED_STATEMENT_COLUMNS, companyId, environment, window)
    const fields = db.values(unrendered.sql, ...unrendered.params)
    return rows.map((row, index) =>
      row[1] === null ? { ...extractedStatementFromValues(fields[index]), rendering: null } : { id: row[0] as string, rendering: row[1] as string },
    )
  })
}

/** A row table kept as documents whose rows belong to a scope within the company: a data table's lines, a quota's values. */
interface ScopedTable {
  table: 'commission_lines' | 'quota_values'
  scope: 'table_id' | 'quota_id'
}
const LINES_OF_TABLE: ScopedTable = { table: 'commission_lines', scope: 'table_id' }
const VALUES_OF_QUOTA: ScopedTable = { table: 'quota_values', scope: 'quota_id' }

/** An id-ordered page of one scope's rows: a seek on the primary key (company, scope, id). */
async function pageOfDocuments<T>(sql: Sql, { table, scope }: ScopedTable, companyId: string, scopeId: string, window: RowWindow): Promise<T[]> {
  const clause = pageClause(window)
  const rows = await sql.all(`SELECT doc FROM ${table} WHERE company_id = ? AND ${scope} = ?${clause.sql}`, companyId, scopeId, ...clause.params)
  return parseAll<T>(rows)
}

async function countInScope(sql: Sql, { table, scope }: ScopedTable, companyId: string, scopeId: string): Promise<number> {
  return countOf(await sql.remembering.get(`SELECT count(*) AS n FROM ${table} WHERE company_id = ? AND ${scope} = ?`, companyId, scopeId))
}

function sqliteStore(connection: SqliteConnection, sql: Sql, rateLimits: SqliteRateLimits): Store {
  const store: Store = {
    kind: 'sqlite',
    companies: {
      async insert(company: Company) {
        await sql.write((db) => db.run('INSERT INTO companies (id, doc) VALUES (?, ?)', company.id, JSON.stringify(company)))
      },
      async get(id) {
        return parse<Company>(await sql.get('SELECT doc FROM companies WHERE id = ?', id))
      },
      async setExchangeRates(id, rates) {
        return sql.write((db) => {
          const company = parse<Company>(db.all('SELECT doc FROM companies WHERE id = ?', id)[0])
          if (!company) return false
          db.run('UPDATE companies SET doc = ? WHERE id = ?', JSON.stringify({ ...company, exchange_rates: { ...rates } }), id)
          return true
        })
      },
      async list() {
        return parseAll<Company>(await sql.all('SELECT doc FROM companies ORDER BY id'))
      },
      async delete(id) {
        return sql.write((db) => {
          for (const table of COMPANY_TABLES) db.run(`DELETE FROM ${table} WHERE company_id = ?`, id)
          return Number(db.run('DELETE FROM companies WHERE id = ?', id).changes) > 0
        })
      },
    },

    apiKeys: {
      async insert(key: ApiKey) {
        await sql.write((db) =>
          db.run(
            'INSERT INTO api_keys (id, company_id, hash, doc) VALUES (?, ?, ?, ?)',
            key.id,
            key.company_id,
            key.hash,
            JSON.stringify(key),
          ),
        )
      },
      async findByHash(hash) {
        return parse<ApiKey>(await sql.get('SELECT doc FROM api_keys WHERE hash = ?', hash))
      },
      async list(companyId) {
        return parseAll<ApiKey>(await sql.all('SELECT doc FROM api_keys WHERE company_id = ? ORDER BY id', companyId))
      },
    },

    users: {
      async save(companyId, users: User[]) {
        await sql.write((db) => {
          for (const user of users) {
            db.run(
              `INSERT INTO users (company_id, id, email_lower, doc) VALUES (?, ?, ?, ?)
               ON CONFLICT (company_id, id) DO UPDATE SET email_lower = excluded.email_lower, doc = excluded.doc`,
              companyId,
              user.id,
              user.email.toLowerCase(),
              JSON.stringify({ ...user, company_id: companyId }),
            )
          }
        })
      },
      async get(companyId, id) {
        return parse<User>(await sql.get('SELECT doc FROM users WHERE company_id = ? AND id = ?', companyId, id))
      },
      async getMany(companyId, ids) {
        const found = new Map<string, User>()
        if (ids.length === 0) return found
        const unique = [...new Set(ids)]
        const rows = await sql.all(`SELECT doc FROM users WHERE company_id = ? AND id IN (${inClause(unique)})`, companyId, ...unique)
        for (const user of parseAll<User>(rows)) found.set(user.id, user)
        return found
      },
      async findByEmails(companyId, emails) {
        const found = new Map<string, User>()
        if (emails.length === 0) return found
        const lower = [...new Set(emails.map((email) => email.toLowerCase()))]
        const rows = await sql.all(
          `SELECT doc FROM users WHERE company_id = ? AND email_lower IN (${inClause(lower)})`,
          companyId,
          ...lower,
        )
        for (const user of parseAll<User>(rows)) found.set(user.email.toLowerCase(), user)
        return found
      },
      async list(companyId, { offset, limit }) {
        const rows = await sql.all('SELECT doc FROM users WHERE company_id = ? ORDER BY id LIMIT ? OFFSET ?', companyId, limit, offset)
        return parseAll<User>(rows)
      },
      async count(companyId) {
        return countOf(await sql.remembering.get('SELECT count(*) AS n FROM users WHERE company_id = ?', companyId))
      },
    },

    userAttributes: {
      async insert(definition: UserAttributeDefinition) {
        await sql.write((db) =>
          db.run(
            'INSERT INTO user_attributes (company_id, id, api_key, doc) VALUES (?, ?, ?, ?)',
            definition.company_id,
            definition.id,
            definition.api_key,
            JSON.stringify(definition),
          ),
        )
      },
      async list(companyId) {
        return parseAll(await sql.remembering.all('SELECT doc FROM user_attributes WHERE company_id = ? ORDER BY id', companyId))
      },
    },

    attributions: {
      async replaceManagers(companyId, userIds, attributions: ManagerAttribution[]) {
        await replaceAttributions(sql, 'manager_attributions', companyId, userIds, attributions)
      },
      async listManagers(companyId) {
        return parseAll(await sql.all('SELECT doc FROM manager_attributions WHERE company_id = ? ORDER BY id', companyId))
      },
      async replaceGroups(companyId, userIds, attributions: GroupAttribution[]) {
        await replaceAttributions(sql, 'group_attributions', companyId, userIds, attributions)
      },
      async listGroups(companyId) {
        return parseAll(await sql.all('SELECT doc FROM group_attributions WHERE company_id = ? ORDER BY id', companyId))
      },
    },

    metrics: {
      async insert(metric: CustomMetric) {
        await sql.write((db) =>
          db.run(
            'INSERT INTO custom_metrics (company_id, id, api_key, doc) VALUES (?, ?, ?, ?)',
            metric.company_id,
            metric.id,
            metric.api_key,
            JSON.stringify(metric),
          ),
        )
      },
      async list(companyId) {
        return parseAll(await sql.remembering.all('SELECT doc FROM custom_metrics WHERE company_id = ? ORDER BY id', companyId))
      },
    },

    dataTables: {
      async insert(table: DataTable) {
        await sql.write((db) =>
          db.run(
            'INSERT INTO data_tables (company_id, id, environment, key, doc) VALUES (?, ?, ?, ?, ?)',
            table.company_id,
            table.id,
            table.environment,
            table.key,
            JSON.stringify(table),
          ),
        )
      },
      async get(companyId, id) {
        return parse<DataTable>(await sql.remembering.get('SELECT doc FROM data_tables WHERE company_id = ? AND id = ?', companyId, id))
      },
      async getByKey(companyId, environment, key) {
        return parse<DataTable>(
          await sql.remembering.get('SELECT doc FROM data_tables WHERE company_id = ? AND environment = ? AND key = ?', companyId, environment, key),
        )
      },
      async list(companyId) {
        return parseAll(await sql.remembering.all('SELECT doc FROM data_tables WHERE company_id = ? ORDER BY id', companyId))
      },
    },

    records: {
      async upsert(companyId, records: DataTableRecord[]) {
        await sql.write((db) => {
          for (const record of records) {
            const stored = db.all(
              'SELECT doc FROM data_table_records WHERE company_id = ? AND table_id = ? AND external_id = ?',
              companyId,
              record.table_id,
              record.external_id,
            )[0]
            const previous = parse<DataTableRecord>(stored)
            const next = previous ? { ...record, id: previous.id, created_at: previous.created_at } : record
            db.run(
              `INSERT INTO data_table_records (company_id, table_id, id, external_id, doc) VALUES (?, ?, ?, ?, ?)
               ON CONFLICT (company_id, table_id, id) DO UPDATE SET doc = excluded.doc`,
              companyId,
              next.table_id,
              next.id,
              next.external_id,
              JSON.stringify({ ...next, company_id: companyId }),
            )
          }
        })
      },
      async list(companyId, tableId, { offset, limit }) {
        const rows = await sql.all(
          'SELECT doc FROM data_table_records WHERE company_id = ? AND table_id = ? ORDER BY id LIMIT ? OFFSET ?',
          companyId,
          tableId,
          limit,
          offset,
        )
        return parseAll<DataTableRecord>(rows)
      },
      async count(companyId, tableId) {
        return countOf(
          await sql.remembering.get('SELECT count(*) AS n FROM data_table_records WHERE company_id = ? AND table_id = ?', companyId, tableId),
        )
      },
      ...sqliteRecordWrites(sql),
      async getMany(companyId, tableId, ids) {
        const found = new Map<string, DataTableRecord>()
        for (const slice of slices([...new Set(ids)])) {
          const rows = await sql.all(
            `SELECT doc FROM data_table_records WHERE company_id = ? AND table_id = ? AND id IN (${placeholders(slice)})`,
            companyId,
            tableId,
            ...slice,
          )
          for (const record of parseAll<DataTableRecord>(rows)) found.set(record.id, record)
        }
        return found
      },
      async page(companyId, tableId, afterId, limit) {
        const rows = await sql.all(
          'SELECT doc FROM data_table_records WHERE company_id = ? AND table_id = ? AND id > ? ORDER BY id LIMIT ?',
          companyId,
          tableId,
          afterId ?? '',
          limit,
        )
        return parseAll<DataTableRecord>(rows)
      },
    },

    structures: {
      async insert(structure: ReportingStructure) {
        await sql.write((db) =>
          db.run(
            'INSERT INTO reporting_structures (company_id, id, doc) VALUES (?, ?, ?)',
            structure.company_id,
            structure.id,
            JSON.stringify(structure),
          ),
        )
      },
      async get(companyId, id) {
        return parse<ReportingStructure>(
          await sql.remembering.get('SELECT doc FROM reporting_structures WHERE company_id = ? AND id = ?', companyId, id),
        )
      },
      async list(companyId) {
        return parseAll(await sql.remembering.all('SELECT doc FROM reporting_structures WHERE company_id = ? ORDER BY id', companyId))
      },
    },

    statements: {
      async insertMany(statements: Statement[]) {
        await sql.write((db) => {
          for (const statement of statements) db.run(INSERT_STATEMENT, ...statementParams(statement))
        })
      },
      async page(companyId, environment, window) {
        return (await statementValues(sql, STATEMENT_COLUMNS, companyId, environment, window)).map(statementFromValues)
      },
      pageForExtraction: (companyId, environment, window, renderingKey) => statementsForExtraction(sql, companyId, environment, window, renderingKey),
      async pageToRender(companyId, environment, renderingKey, afterId, limit) {
        const rows = await sql.values(
          `SELECT ${EXTRACTED_STATEMENT_COLUMNS} FROM statements
           WHERE company_id = ? AND environment = ? AND id > ? AND rendering_key IS NOT ? ORDER BY id LIMIT ?`,
          companyId,
          environment,
          afterId ?? '',
          renderingKey,
          limit,
        )
        return rows.map(extractedStatementFromValues)
      },
      async dropRenderingsOfUsers(companyId, userIds) {
        await sql.write((db) => {
          // A rare change, and no index on the statements' user: one pass over the company's statements.
          for (const slice of slices([...new Set(userIds)])) {
            db.run(
              `UPDATE statements SET rendering_key = NULL, rendering = NULL
               WHERE company_id = ? AND user_id IN (${placeholders(slice)}) AND rendering_key IS NOT NULL`,
              companyId,
              ...slice,
            )
          }
        })
      },
      async saveRenderings(companyId, environment, renderings) {
        await sql.write((db) => {
          for (const { id, key, text } of renderings) {
            db.run('UPDATE statements SET rendering_key = ?, rendering = ? WHERE company_id = ? AND environment = ? AND id = ?', key, text, companyId, environment, id)
          }
        })
      },
      list: (companyId, environment, window) => listStatements(sql, companyId, environment, window),
      async count(companyId, environment) {
        return countOf(
          await sql.remembering.get('SELECT count(*) AS n FROM statements WHERE company_id = ? AND environment = ?', companyId, environment),
        )
      },
      currenciesInUse: (companyId, environment) => statementCurrencies(sql.remembering, companyId, environment),
      ...sqliteStatementResults(sql),
    },

    commissionLines: {
      async insertMany(lines: CommissionLine[]) {
        await sql.write((db) => insertLines(db, lines))
      },
      page: (companyId, tableId, window) => pageOfDocuments<CommissionLine>(sql, LINES_OF_TABLE, companyId, tableId, window),
      list: (companyId, tableId, window) => listCommissionLines(sql, companyId, tableId, window),
      count: (companyId, tableId) => countInScope(sql, LINES_OF_TABLE, companyId, tableId),
      currenciesInUse: (companyId, tableId) => lineCurrencies(sql.remembering, companyId, tableId),
      ...sqliteLineResults(sql),
    },

    quotas: {
      async insert(quota: Quota) {
        await sql.write((db) =>
          db.run('INSERT INTO quotas (company_id, id, doc) VALUES (?, ?, ?)', quota.company_id, quota.id, JSON.stringify(quota)),
        )
      },
      async get(companyId, id) {
        return parse<Quota>(await sql.remembering.get('SELECT doc FROM quotas WHERE company_id = ? AND id = ?', companyId, id))
      },
      async list(companyId) {
        return parseAll(await sql.remembering.all('SELECT doc FROM quotas WHERE company_id = ? ORDER BY id', companyId))
      },
      async setType(companyId, id, type, modifiedAt) {
        return sql.write((db) => {
          const quota = parse<Quota>(db.all('SELECT doc FROM quotas WHERE company_id = ? AND id = ?', companyId, id)[0])
          if (!quota) return false
          const changed: Quota = { ...quota, type, modified_at: modifiedAt }
          db.run('UPDATE quotas SET doc = ? WHERE company_id = ? AND id = ?', JSON.stringify(changed), companyId, id)
          return true
        })
      },
    },

    quotaValues: {
      async insertMany(values: QuotaValue[]) {
        await sql.write((db) => {
          for (const value of values) {
            db.run(
              `INSERT INTO quota_values (company_id, quota_id, id, user_id, period, modified_at, doc)
               VALUES (?, ?, ?, ?, ?, ?, ?)`,
              value.company_id,
              value.quota_id,
              value.id,
              value.user_id,
              value.period,
              value.modified_at,
              JSON.stringify(value),
            )
          }
        })
      },
      page: (companyId, quotaId, window) => pageOfDocuments<QuotaValue>(sql, VALUES_OF_QUOTA, companyId, quotaId, window),
      async findCells(companyId, quotaId, cells) {
        const found: QuotaValue[] = []
        for (const slice of slices(cells)) {
          const rows = await sql.all(
            `SELECT doc FROM quota_values INDEXED BY quota_values_cell
             WHERE company_id = ? AND quota_id = ? AND (user_id, period) IN (VALUES ${slice.map(() => '(?, ?)').join(', ')})`,
            companyId,
            quotaId,
            ...slice.flatMap((cell) => [cell.user_id, cell.period]),
          )
          found.push(...parseAll<QuotaValue>(rows))
        }
        return found
      },
      count: (companyId, quotaId) => countInScope(sql, VALUES_OF_QUOTA, companyId, quotaId),
    },

    plans: sqlitePlans(sql),
    imports: sqliteImports(sql),
    // One file, one writer, no time limit on a transaction: an import of any size is applied in one.
    itemsPerTransaction: Number.POSITIVE_INFINITY,
    adminEdits: sqliteAdminEdits(sql),
    rateLimits,
    importStatistics: sqliteImportStatistics(sql),
    clockOffset: sqliteClockOffset(sql),
    companyOrigins: sqliteCompanyOrigins(sql),

    async transaction(work) {
      if (sql !== connection.sql) return work(store)
      return connection.transaction((inside) => work(sqliteStore(connection, inside, rateLimits)))
    },

    // Every commit of the connection counts.
    committedWrites: () => connection.commits,

    async ping() {
      await sql.get('SELECT 1 AS n')
    },

    async close() {
      connection.close()
      rateLimits.close()
    },
  }
  return store
}

async function replaceAttributions(
  sql: Sql,
  table: 'manager_attributions' | 'group_attributions',
  companyId: string,
  userIds: readonly string[],
  attributions: ReadonlyArray<ManagerAttribution | GroupAttribution>,
): Promise<void> {
  await sql.write((db) => {
    if (userIds.length > 0) {
      db.run(`DELETE FROM ${table} WHERE company_id = ? AND user_id IN (${inClause(userIds)})`, companyId, ...userIds)
    }
    for (const attribution of attributions) {
      db.run(
        `INSERT INTO ${table} (company_id, id, user_id, doc) VALUES (?, ?, ?, ?)`,
        companyId,
        attribution.id,
        attribution.user_id,
        JSON.stringify(attribution),
      )
    }
  })
}
