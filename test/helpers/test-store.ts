import { createHash } from 'node:crypto'
import { resolve } from 'node:path'
import { newId } from '../../src/ids.ts'
import { connectMongo } from '../../src/store/mongo/connection.ts'
import { openMongoStore } from '../../src/store/mongo/mongo-store.ts'
import type { Store } from '../../src/store/port.ts'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts'

/**
 * Where the integration tests keep their data. By default each test server has a fresh in-memory SQLite
 * store. With MONGODB_URL set (the CI's MongoDB job), the same tests run on MongoDB instead: each test server
 * gets a database of its own, dropped when it closes, and each child process a database named after its
 * DATA_DIR, so that the processes of one test share a store as they share a directory, and no two tests do.
 */
const mongodbUrl = process.env.MONGODB_URL || null

export interface TestStore {
  store: Store
  /** Closes the store and drops its data. */
  dispose(): Promise<void>
}

export async function openTestStore(): Promise<TestStore> {
  if (!mongodbUrl) {
    const store = openSqliteStore(':memory:')
    return { store, dispose: () => store.close() }
  }
  const url = mongodbUrl
  const database = `commission_api_test_${newId()}`
  const store = await openMongoStore(url, { database })
  return {
    store,
    async dispose() {
      await store.close()
      await dropDatabase(url, database)
    },
  }
}

/** Drops a test database of the MongoDB at `url`. */
export async function dropDatabase(url: string, database: string): Promise<void> {
  const { client, db } = await connectMongo(url, database)
  try {
    await db.dropDatabase()
  } finally {
    await client.close()
  }
}

/** The connection string with its database (path) replaced by `database`, options kept. */
export function withDatabase(url: string, database: string): string {
  const match = /^(mongodb(?:\+srv)?:\/\/[^/?]*)(?:\/[^?]*)?(\?.*)?$/.exec(url)
  if (!match) throw new Error('MONGODB_URL is not a mongodb:// or mongodb+srv:// connection string')
  return `${match[1]}/${database}${match[2] ?? ''}`
}

/**
 * A child process's environment: unchanged without MONGODB_URL; with it, MONGODB_URL names a database of the
 * child's DATA_DIR (a test that sets MONGODB_URL itself keeps its own).
 */
export function childEnvironment(env: Record<string, string | undefined>, explicit: Record<string, string>): Record<string, string | undefined> {
  const merged = { ...env, ...explicit }
  if (!mongodbUrl || 'MONGODB_URL' in explicit) return merged
  const dataDir = resolve(merged.DATA_DIR ?? './data')
  const database = `commission_api_test_${createHash('sha256').update(dataDir).digest('hex').slice(0, 16)}`
  return { ...merged, MONGODB_URL: withDatabase(mongodbUrl, database) }
}
