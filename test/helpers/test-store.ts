import { createHash } from 'node:crypto'
import { resolve } from 'node:path'
import { loadConfig } from '../../src/config.ts'
import { newId } from '../../src/ids.ts'
import { connectMongo } from '../../src/store/mongo/connection.ts'
import { openMongoStore } from '../../src/store/mongo/mongo-store.ts'
import { openStore } from '../../src/store/open-store.ts'
import type { Store } from '../../src/store/port.ts'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts'

/**
 * Where the tests keep their data: the one place that knows which store this run uses. By default each test
 * server has a fresh in-memory SQLite store, and each process (a child, or a server started in the test's own
 * process) the SQLite file of its DATA_DIR. With MONGODB_URL set (the CI's MongoDB job), the same tests run on
 * MongoDB instead: each test server gets a database of its own, dropped when it closes, and each process a
 * database named after its DATA_DIR, so that the processes of one test share a store as they share a
 * directory, and no two tests do. A test that cannot run on one of the stores says so with `skipIf` and why.
 */
const mongodbUrl = process.env.MONGODB_URL || null

/** True when this run's tests use MongoDB (MONGODB_URL is set). */
export const onMongo = mongodbUrl !== null

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
 * The configuration of a process of this run: `explicit`, and with MONGODB_URL set, a MONGODB_URL that names
 * the database of the process's DATA_DIR (a test that sets MONGODB_URL itself keeps its own). Give it to
 * `loadConfig` for a server started in the test's own process; `childEnvironment` gives it to a child.
 */
export function runEnvironment(explicit: Record<string, string>): Record<string, string> {
  if (!mongodbUrl || 'MONGODB_URL' in explicit) return explicit
  const dataDir = resolve(explicit.DATA_DIR ?? process.env.DATA_DIR ?? './data')
  const database = `commission_api_test_${createHash('sha256').update(dataDir).digest('hex').slice(0, 16)}`
  return { ...explicit, MONGODB_URL: withDatabase(mongodbUrl, database) }
}

/** A child process's environment: the parent's, with `explicit` configured for this run (see `runEnvironment`). */
export function childEnvironment(
  env: Record<string, string | undefined>,
  explicit: Record<string, string>,
): Record<string, string | undefined> {
  return { ...env, ...runEnvironment(explicit) }
}

/** Opens the store that a process of this run whose DATA_DIR is `dataDir` uses, as another process would. */
export function openRunStore(dataDir: string): Promise<Store> {
  return openStore(loadConfig(runEnvironment({ DATA_DIR: dataDir })))
}
