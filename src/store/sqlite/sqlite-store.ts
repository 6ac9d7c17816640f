import type { Store } from '../port.ts'
import { sqliteAdminEdits } from './admin-edits.ts'
import { sqliteApiKeys } from './api-keys.ts'
import { sqliteAttributions } from './attributions.ts'
import { sqliteClockOffset } from './clock-offset.ts'
import { sqliteCommissionLines } from './commission-lines.ts'
import { sqliteCompanies } from './companies.ts'
import { sqliteCompanyOrigins } from './company-origins.ts'
import { type Sql, SqliteConnection } from './connection.ts'
import { sqliteDataTables } from './data-tables.ts'
import { sqliteImportStatistics } from './import-statistics.ts'
import { sqliteImports } from './imports.ts'
import { sqliteMetrics } from './metrics.ts'
import { sqliteOpenError } from './open-errors.ts'
import { sqlitePlans } from './plans.ts'
import { sqliteQuotaValues } from './quota-values.ts'
import { sqliteQuotas } from './quotas.ts'
import { rateLimitFile, SqliteRateLimits } from './rate-limits.ts'
import { sqliteRecords } from './records.ts'
import { sqliteStatements } from './statements.ts'
import { sqliteStructures } from './structures.ts'
import { sqliteUserAttributes } from './user-attributes.ts'
import { sqliteUsers } from './users.ts'

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

/**
 * The store over `sql`: the connection's, or inside a transaction the transaction's. Each repository is a module
 * of its own over the same `sql`.
 */
function sqliteStore(connection: SqliteConnection, sql: Sql, rateLimits: SqliteRateLimits): Store {
  const store: Store = {
    kind: 'sqlite',
    companies: sqliteCompanies(sql),
    apiKeys: sqliteApiKeys(sql),
    users: sqliteUsers(sql),
    userAttributes: sqliteUserAttributes(sql),
    attributions: sqliteAttributions(sql),
    metrics: sqliteMetrics(sql),
    dataTables: sqliteDataTables(sql),
    records: sqliteRecords(sql),
    structures: sqliteStructures(sql),
    statements: sqliteStatements(sql),
    commissionLines: sqliteCommissionLines(sql),
    quotas: sqliteQuotas(sql),
    quotaValues: sqliteQuotaValues(sql),
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
