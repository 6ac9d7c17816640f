import { ObjectId } from 'bson'
import { afterAll, describe, expect, it } from 'vitest'
import { newId } from '../../src/ids.ts'
import type { Store } from '../../src/store/port.ts'
import { openMongoStore } from '../../src/store/mongo/mongo-store.ts'
import { connectMongo } from '../../src/store/mongo/connection.ts'
import { ImportQueueFullError } from '../../src/store/port.ts'
import { PART_BYTES } from '../../src/store/mongo/json-parts.ts'
import { ofPlan } from '../../src/store/mongo/filters.ts'
import { dropDatabase } from '../helpers/test-store.ts'
import { aCommissionLine, aCompany, anImport, aStatement, heavyItems, minute } from './builders.ts'
import { type StoreAdapter, storeContract } from './contract.ts'

// The MongoDB adapter passes the contract the SQLite adapter passes, against a real server: run when
// MONGODB_URL is set (a replica set, e.g. the CI's service container), reported as skipped with the reason
// otherwise. No test double stands in for MongoDB. The URL itself is never printed: it may hold a password.
const url = process.env.MONGODB_URL || null

/**
 * Stores in this run's own database, dropped after the run; an isolated store (the import suites, whose claim
 * scans the imports of every company, and the clock's offset, one value per database) gets a database of its
 * own, dropped after its test. A twin is a second store on the same database, as another instance opens it.
 */
function mongoStores(serverUrl: string, database: string): StoreAdapter {
  const isolated = new Map<Store, string>()
  return {
    create: () => openMongoStore(serverUrl, { database }),
    async createIsolated() {
      const name = `commission_api_test_${newId()}`
      const store = await openMongoStore(serverUrl, { database: name })
      isolated.set(store, name)
      return store
    },
    openTwin: (store) => openMongoStore(serverUrl, { database: isolated.get(store) ?? database }),
    async cleanup(store) {
      const name = isolated.get(store)
      if (name === undefined) return
      await dropDatabase(serverUrl, name)
      isolated.delete(store)
    },
  }
}

/** The names of the indexes an explained plan scans, wherever its stages nest them (`inputStage`, `inputStages`, `queryPlan`). */
function indexesScanned(plan: unknown): string[] {
  if (Array.isArray(plan)) return plan.flatMap(indexesScanned)
  if (plan === null || typeof plan !== 'object') return []
  const stage = plan as Record<string, unknown>
  const own = typeof stage.indexName === 'string' ? [stage.indexName] : []
  return [...own, ...Object.values(stage).flatMap(indexesScanned)]
}

describe.skipIf(url === null)('MongoDB adapter (needs MONGODB_URL, a replica set: skipped when it is unset)', () => {
  const serverUrl = url ?? ''
  // Stores opened by the suites share the database: every test works in companies (and rate subjects) it creates.
  const database = `commission_api_test_${newId()}`
  afterAll(() => dropDatabase(serverUrl, database))

  it('connects to the deployment of MONGODB_URL, which the adapter accepts, and answers ping', async () => {
    const store = await openMongoStore(serverUrl, { database })
    try {
      await expect(store.ping()).resolves.toBeUndefined()
    } finally {
      await store.close()
    }
  })

  it('drops at start-up the index of lines by record an earlier release made', async () => {
    const name = `commission_api_test_${newId()}`
    const { client, db } = await connectMongo(serverUrl, name)
    try {
      await db.collection('commission_lines').createIndex({ company_id: 1, record_id: 1 }, { name: 'company_record_calculated' })
      const store = await openMongoStore(serverUrl, { database: name })
      await store.close()
      const names = (await db.collection('commission_lines').indexes()).map((index) => index.name)
      expect(names).toContain('company_plan_cell')
      expect(names).not.toContain('company_record_calculated')
    } finally {
      await client.close()
      await dropDatabase(serverUrl, name)
    }
  })

  it('drops at start-up the collection of calls by request key an earlier release made', async () => {
    const name = `commission_api_test_${newId()}`
    const { client, db } = await connectMongo(serverUrl, name)
    try {
      await db.collection('import_requests').insertOne({ company_id: new ObjectId(), request_key: 'k', received_at: minute(0) })
      const store = await openMongoStore(serverUrl, { database: name })
      await store.close()
      expect(await db.listCollections({ name: 'import_requests' }).toArray()).toStrictEqual([])
      // A start on a store without it drops nothing, and fails on nothing.
      await (await openMongoStore(serverUrl, { database: name })).close()
    } finally {
      await client.close()
      await dropDatabase(serverUrl, name)
    }
  })

  it("finds a plan's statements and lines through the partial index company_plan_cell, not by scanning the company", async () => {
    const store = await openMongoStore(serverUrl, { database })
    const { client, db } = await connectMongo(serverUrl, database)
    try {
      const companyId = aCompany().id
      const [planId, tableId, userId] = [newId(), newId(), newId()]
      const periods = ['2026-01', '2026-02', '2026-03']
      // Results of no plan beside the plan's few, which a scan of the company's documents would read too.
      await store.statements.insertMany([
        ...Array.from({ length: 200 }, () => aStatement(companyId)),
        ...periods.map((period) => aStatement(companyId, { plan_id: planId, user_id: userId, period })),
      ])
      await store.commissionLines.insertMany([
        ...Array.from({ length: 200 }, () => aCommissionLine(companyId, tableId)),
        ...periods.map((period) => aCommissionLine(companyId, tableId, { plan_id: planId, user_id: userId, period })),
      ])
      const selections = [undefined, { cells: [{ user_id: userId, period: periods[1] }] }, { userIds: [userId] }]
      for (const collection of ['statements', 'commission_lines']) {
        for (const only of selections) {
          // The query `findOfPlan` sends: the plan's filter, in id order.
          const explained = await db
            .collection(collection)
            .find(ofPlan(companyId, planId, only), { sort: { _id: 1 } })
            .explain('queryPlanner')
          expect(indexesScanned(explained.queryPlanner.winningPlan), `${collection} ${JSON.stringify(only)}`).toContain('company_plan_cell')
        }
      }
    } finally {
      await store.close()
      await client.close()
    }
  })

  it('removes the parts of a large payload that a full queue refused, and keeps those of one it took', async () => {
    const name = `commission_api_test_${newId()}`
    const store = await openMongoStore(serverUrl, { database: name })
    const { client, db } = await connectMongo(serverUrl, name)
    try {
      const companyId = aCompany().id
      const enqueue = (items: unknown[], bytes: number) =>
        store.imports.enqueue(
          anImport(companyId, minute(0), 10),
          { id: newId(), company_id: companyId, items, options: { all: false, keep_overrides: false }, received_at: minute(0), bytes },
          minute(0),
          1000,
        )
      const parts = () => db.collection('import_payload_parts').countDocuments()
      await enqueue([{ email: 'a@example.com' }], 900)
      // A client sending a body of several parts again and again while its company's queue is full.
      const large = heavyItems(PART_BYTES * 2 + 1)
      for (let attempt = 0; attempt < 3; attempt++) await expect(enqueue(large, 900)).rejects.toBeInstanceOf(ImportQueueFullError)
      expect(await parts()).toBe(0)
      await db.collection('imports').deleteMany({})
      const taken = await enqueue(large, 900)
      expect(await parts()).toBe(2)
      const [stored] = await store.imports.payloads(companyId, taken.id)
      expect(JSON.stringify(stored.items)).toBe(JSON.stringify(large))
    } finally {
      await store.close()
      await client.close()
      await dropDatabase(serverUrl, name)
    }
  })

  it('removes the parts of a large payload sent again, which the import of its first sending answers', async () => {
    const name = `commission_api_test_${newId()}`
    const store = await openMongoStore(serverUrl, { database: name })
    const { client, db } = await connectMongo(serverUrl, name)
    try {
      const companyId = aCompany().id
      const large = heavyItems(PART_BYTES * 2 + 1)
      // A client sending the same large call again under its request id, as after a lost answer.
      const send = () =>
        store.imports.enqueue(
          anImport(companyId, minute(0), 10),
          {
            id: newId(),
            company_id: companyId,
            items: large,
            options: { all: false, keep_overrides: false },
            received_at: minute(0),
            bytes: 900,
            resend: { id_key: 'request-1', call_key: 'call-1' },
          },
          minute(0),
        )
      const parts = () => db.collection('import_payload_parts').countDocuments()
      const first = await send()
      expect(await parts()).toBe(2)
      for (let attempt = 0; attempt < 3; attempt++) expect((await send()).id).toBe(first.id)
      expect(await parts()).toBe(2)
      const stored = await store.imports.payloads(companyId, first.id)
      expect(stored).toHaveLength(1)
      expect(JSON.stringify(stored[0].items)).toBe(JSON.stringify(large))
    } finally {
      await store.close()
      await client.close()
      await dropDatabase(serverUrl, name)
    }
  })

  storeContract('mongodb', mongoStores(serverUrl, database))
})
