import { join } from 'node:path'
import { type Config, IN_MEMORY } from '../config.ts'
import { DEFAULT_DATABASE, databaseInUrl } from './mongo/url.ts'
import type { Store } from './port.ts'
import { openSqliteStore } from './sqlite/sqlite-store.ts'

/** The SQLite file of the embedded store under DATA_DIR, or `:memory:` for an in-memory store. */
export function sqliteFile(config: Pick<Config, 'dataDir'>): string {
  return config.dataDir === IN_MEMORY ? IN_MEMORY : join(config.dataDir, 'commission-api.sqlite')
}

/**
 * Opens the store the configuration selects: MongoDB when MONGODB_URL is set, the embedded SQLite file otherwise.
 * The MongoDB driver is loaded only then: it costs a process on the embedded store (and its worker thread) about
 * 12 MiB of memory each.
 */
export async function openStore(config: Pick<Config, 'dataDir' | 'mongodbUrl'>): Promise<Store> {
  if (config.mongodbUrl) {
    const { openMongoStore } = await import('./mongo/mongo-store.ts')
    return openMongoStore(config.mongodbUrl)
  }
  return openSqliteStore(sqliteFile(config))
}

/**
 * Which store the configuration opens, for start-up lines: the SQLite file's absolute path, or the MongoDB
 * hosts and database (never the credentials a connection string may carry).
 */
export function storeDescription(config: Pick<Config, 'dataDir' | 'mongodbUrl'>): string {
  if (!config.mongodbUrl)
    return config.dataDir === IN_MEMORY
      ? 'SQLite in memory (DATA_DIR=:memory:): nothing outlives the process'
      : `SQLite file ${sqliteFile(config)}`
  const hosts = /^mongodb(?:\+srv)?:\/\/(?:[^@/?]*@)?([^/?]*)/.exec(config.mongodbUrl)?.[1] ?? '?'
  return `MongoDB ${hosts}, database ${databaseInUrl(config.mongodbUrl) ?? DEFAULT_DATABASE}`
}
