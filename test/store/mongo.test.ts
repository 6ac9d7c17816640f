import { afterAll, expect, it } from 'vitest'
import { newId } from '../../src/ids.ts'
import type { Store } from '../../src/store/port.ts'
import { openMongoStore } from '../../src/store/mongo/mongo-store.ts'
import { dropDatabase } from '../helpers/test-store.ts'
import { calculationContract } from './calculation-contract.ts'
import { companyTransactionsContract } from './company-transactions-contract.ts'
import { type StoreFactory, storeContract } from './contract.ts'
import { importStatisticsContract } from './import-statistics-contract.ts'
import { importsContract, sharedImportQueueContract } from './imports-contract.ts'
import { offsetListsContract } from './offset-lists-contract.ts'
import { rateLimitContract, sharedRateLimitContract } from './rate-limits-contract.ts'
import { adminEditsContract } from './admin-edits-contract.ts'
import { statementExtractionContract } from './statement-extraction-contract.ts'
import { testKitContract } from './test-kit-contract.ts'

// The MongoDB adapter passes the contract the SQLite adapter passes, against a real server: run when
// MONGODB_URL is set (a replica set, e.g. the CI's service container). Skipped tests are not allowed, so an
// unset MONGODB_URL is recorded by one passing test whose name says the suite did not run. No test double
// stands in for MongoDB. The URL itself is never printed: it may hold a password.
const url = process.env.MONGODB_URL || null

const status = url ? 'runs against MONGODB_URL' : 'NOT RUN, MONGODB_URL is unset (set it to a replica set to run it)'

/** Whether the MongoDB of MONGODB_URL answered, as a deployment the adapter accepts; false when there is none. */
async function serverAnswers(): Promise<boolean> {
  if (!url) return false
  const database = `commission_api_test_${newId()}`
  const store = await openMongoStore(url, { database })
  try {
    await store.ping()
    return true
  } finally {
    await store.close()
    await dropDatabase(url, database)
  }
}

it(`MongoDB contract suite: ${status}`, async () => {
  console.info(`MongoDB contract suite: ${status}`)
  expect(await serverAnswers()).toBe(url !== null)
})

/** Every contract suite against MongoDB, in this run's own database, dropped after. */
function mongoSuites(serverUrl: string): void {
  // Stores opened by the suites share the database: every test works in companies (and rate subjects) it creates.
  const database = `commission_api_test_${newId()}`
  const factory = { create: () => openMongoStore(serverUrl, { database }) }

  afterAll(() => dropDatabase(serverUrl, database))

  // The worker's claim scans the imports of every company: the import suites get a database per test, so
  // that no runnable import left by another test is claimed in their place.
  const databases = new Map<Store, string>()
  const isolated: StoreFactory = {
    async create() {
      const name = `commission_api_test_${newId()}`
      const store = await openMongoStore(serverUrl, { database: name })
      databases.set(store, name)
      return store
    },
    async cleanup(store) {
      await dropDatabase(serverUrl, databases.get(store) ?? '')
      databases.delete(store)
    },
  }

  storeContract('mongodb', factory)
  offsetListsContract('mongodb', factory)
  adminEditsContract('mongodb', factory)
  statementExtractionContract('mongodb', factory)
  calculationContract('mongodb', factory)
  rateLimitContract('mongodb', factory)
  // A second store on the same database is another instance: the counters must be shared.
  sharedRateLimitContract('mongodb', { ...factory, openTwin: () => openMongoStore(serverUrl, { database }) })
  companyTransactionsContract('mongodb', { ...factory, openTwin: () => openMongoStore(serverUrl, { database }) })
  importsContract('mongodb', isolated)
  // A second store on the same database is another instance: the queue bound must hold across both.
  sharedImportQueueContract('mongodb', { ...isolated, openTwin: async (store) => openMongoStore(serverUrl, { database: databases.get(store) ?? '' }) })
  importStatisticsContract('mongodb', isolated)
  // The clock's offset is one value per database: a database per test, and a second store on it is another instance.
  testKitContract('mongodb', { ...isolated, openTwin: async (store) => openMongoStore(serverUrl, { database: databases.get(store) ?? '' }) })
}

if (url) mongoSuites(url)
