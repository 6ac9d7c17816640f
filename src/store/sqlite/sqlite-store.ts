import type { Store } from '../port.ts'
import { repositoriesOver } from '../shared/repositories.ts'
import { type Sql, SqliteConnection } from './connection.ts'
import { sqliteOpenError } from './open-errors.ts'
import { rateLimitFile, SqliteRateLimits } from './rate-limits.ts'
import * as repositories from './repositories.ts'

/**
 * Opens (and migrates) the SQLite store at `path`, a file or `:memory:`. A write waits `writeLockTimeoutMs` at most
 * for another connection's write lock (10 s by default), then fails with StoreBusyError.
 */
export function openSqliteStore(path: string, options: { writeLockTimeoutMs?: number } = {}): Store {
  let connection: SqliteConnection
  try {
    connection = new SqliteConnection(path, options)
  } catch (error) {
    throw sqliteOpenError(path, error)
  }
  // The counters' file is named apart: told that the store's file is not a database, an operator would move the data away.
  const countersFile = rateLimitFile(path)
  try {
    return sqliteStore(connection, connection.sql, new SqliteRateLimits(countersFile))
  } catch (error) {
    connection.close()
    throw sqliteOpenError(countersFile, error, "the rate limit's counters")
  }
}

/** The store over `sql`: the connection's, or inside a transaction the transaction's. */
function sqliteStore(connection: SqliteConnection, sql: Sql, rateLimits: SqliteRateLimits): Store {
  const store: Store = {
    kind: 'sqlite',
    ...repositoriesOver(repositories, sql),
    // One file, one writer, no time limit on a transaction: an import of any size is applied in one.
    itemsPerTransaction: Number.POSITIVE_INFINITY,
    readsBlockThread: true,
    rateLimits,

    async transaction(work) {
      if (sql !== connection.sql) return work(store)
      return connection.transaction((inside) => work(sqliteStore(connection, inside, rateLimits)))
    },

    // Every commit of the connection counts.
    committedWrites: () => connection.commits,

    dataVersion: async () => (sql === connection.sql ? connection.dataVersion() : null),

    async ping() {
      await connection.checkSchema()
    },

    backupTo: (file) => connection.backupTo(file),

    async close() {
      connection.close()
      rateLimits.close()
    },
  }
  return store
}
