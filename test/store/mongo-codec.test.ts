import { createRequire } from 'node:module'
import { calculateObjectSize, deserialize, type Document, ObjectId, serialize } from 'bson'
import {
  type BulkWriteResult,
  MongoBulkWriteError,
  MongoClient,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  MongoWriteConcernError,
  type Db,
  type TopologyDescription,
  type WriteConcernError,
} from 'mongodb'
import { describe, expect, it } from 'vitest'
import { newId } from '../../src/ids.ts'
import { latestImportDeadline } from '../../src/store/model.ts'
import { type Codec, decode, encode, lookupId, toObjectId } from '../../src/store/mongo/codec.ts'
import * as collections from '../../src/store/mongo/collections.ts'
import {
  databaseInUrl,
  isDuplicateKey,
  toPortError,
  toPortErrorInTransaction,
  toPortErrorOfWrite,
} from '../../src/store/mongo/connection.ts'
import { byId, cursorId, inCompany, inTable, ofPlan, pageFilter } from '../../src/store/mongo/filters.ts'
import { mongoApiKeys } from '../../src/store/mongo/api-keys.ts'
import { mongoClockOffset } from '../../src/store/mongo/clock-offset.ts'
import { mongoCompanies } from '../../src/store/mongo/companies.ts'
import { claimUpdate, mongoImports, runnable } from '../../src/store/mongo/imports.ts'
import { ensureIndexes, INDEXES } from '../../src/store/mongo/indexes.ts'
import { COMPANY_LOCK, ensureLock, lockFilter } from '../../src/store/mongo/locks.ts'
import { atomically, type MongoContext } from '../../src/store/mongo/context.ts'
import { saveRecordsOperations, upsertRecordsOperations } from '../../src/store/mongo/records.ts'
import { PART_BYTES } from '../../src/store/mongo/json-parts.ts'
import { deleteByIds, replaceOwnById } from '../../src/store/mongo/operations.ts'
import { payloadFrom, storedPayload } from '../../src/store/mongo/payload-parts.ts'
import { hitPipeline, MongoRateLimits } from '../../src/store/mongo/rate-limits.ts'
import { BatchedRateCounts } from '../../src/rate-limit/batched-counts.ts'
import { EXTRA_INDEXES } from '../../src/store/mongo/mongo-store.ts'
import { countsFrom } from '../../src/store/mongo/import-statistics.ts'
import { withDatabase } from '../helpers/test-store.ts'
import { StoreBusyError, StoreConflictError, StoreUnconfirmedError } from '../../src/store/port.ts'
import {
  aCommissionLine,
  aCompany,
  aDataTable,
  aGroupAttribution,
  aManagerAttribution,
  aMetric,
  anApiKey,
  aQuota,
  aQuotaValue,
  aRecord,
  aStatement,
  aStructure,
  aUser,
  aUserAttribute,
  heavyItems,
  LARGEST_BODY_BYTES,
  minute,
} from './builders.ts'
import { gate } from './contract/support.ts'

// Pure parts of the MongoDB adapter, checked without a server: documents go through the BSON serializer the
// driver uses on the wire, and no test pretends to be MongoDB (the contract suite runs against a real one in
// `mongo.test.ts` when MONGODB_URL is set).

/** What the driver sends and gets back: the document as BSON bytes, read again with the driver's defaults. */
function throughBson(document: Document): Document {
  return deserialize(serialize(document, { ignoreUndefined: true }))
}

const companyId = newId()
const tableId = newId()
const quotaId = newId()

const SAMPLES: Array<[Codec, object]> = [
  [collections.COMPANIES, aCompany()],
  [collections.API_KEYS, anApiKey(companyId, newId())],
  [collections.USERS, aUser(companyId, { email: 'Ann.Smith@Example.com', arrival_date: null, junior: null })],
  [collections.USER_ATTRIBUTES, aUserAttribute(companyId)],
  [collections.MANAGER_ATTRIBUTIONS, aManagerAttribution(companyId, newId(), newId())],
  [collections.GROUP_ATTRIBUTIONS, aGroupAttribution(companyId, newId())],
  [collections.CUSTOM_METRICS, aMetric(companyId, { kind: 'enum', currencies: null, enum_values: ['low', 'high'] })],
  [collections.DATA_TABLES, aDataTable(companyId)],
  [collections.DATA_TABLE_RECORDS, aRecord(companyId, tableId, { overrides: { amount: { value: -0.5, currency: 'USD' } } })],
  [collections.REPORTING_STRUCTURES, aStructure(companyId, { type: 'record_reporting', data_table_id: tableId, field_keys: ['a'] })],
  [collections.REPORTING_STRUCTURES, aStructure(companyId)],
  [collections.STATEMENTS, aStatement(companyId, { payment: 2 ** 40 + 0.25, target: 3_000_000_000, on_target_earning: null })],
  [collections.COMMISSION_LINES, aCommissionLine(companyId, tableId)],
  [collections.QUOTAS, aQuota(companyId)],
  [collections.QUOTA_VALUES, aQuotaValue(companyId, quotaId, { user_id: 'not-an-object-id' })],
  [
    collections.IMPORTS,
    {
      id: newId(),
      company_id: companyId,
      target: 'records',
      table_id: tableId,
      data_table_key: 'deals',
      join_key: `records:${tableId}`,
      status: 'finished',
      window_ends_at: minute(1),
      created_at: minute(0),
      launched_at: minute(1),
      finished_at: minute(2),
      error: true,
      details: [
        {
          payload_id: newId(),
          number_of_records: 2,
          error: {
            title: 'PartialFailure',
            description: '1 item',
            parsing_error_details: [{ line_number: 2, row: { a: [1] }, details: 'bad' }],
          },
        },
      ],
      lease_owner: null,
      lease_expires_at: null,
      attempts: 1,
      payload_bytes: 2048,
    },
  ],
  [
    collections.IMPORT_PAYLOADS,
    {
      id: newId(),
      company_id: companyId,
      import_id: newId(),
      items: [{ email: 'a@b.c' }, null, 3],
      options: { all: false, keep_overrides: true },
      received_at: minute(0),
      bytes: 48,
    },
  ],
]

describe('mongo codec: records ⇄ documents', () => {
  for (const [codec, record] of SAMPLES) {
    it(`round-trips a ${codec.collection} record through BSON exactly`, () => {
      const stored = throughBson(encode(codec, record))
      expect(decode(codec, stored)).toStrictEqual(record)
    })
  }

  it('stores the id as _id and every reference as an ObjectId, leaving other fields as they are', () => {
    const line = aCommissionLine(companyId, tableId)
    const document = encode(collections.COMMISSION_LINES, line)
    expect(document._id).toStrictEqual(new ObjectId(line.id))
    expect(document).not.toHaveProperty('id')
    for (const field of ['company_id', 'table_id', 'record_id', 'user_id'] as const) {
      expect(document[field]).toStrictEqual(new ObjectId(line[field]))
    }
    expect(document.modified_at).toBe(line.modified_at)
    expect(document.record_values).toStrictEqual(line.record_values)
  })

  it('keeps a reference that is not a canonical ObjectId as the string it was', () => {
    const value = aQuotaValue(companyId, quotaId, { user_id: 'ABCDEF0123456789ABCDEF01' })
    expect(encode(collections.QUOTA_VALUES, value).user_id).toBe('ABCDEF0123456789ABCDEF01')
  })

  it('stores a user’s lower-case email for the unique index, and drops it on read', () => {
    const user = aUser(companyId, { email: 'Ann@Example.COM' })
    const document = encode(collections.USERS, user)
    expect(document.email_lower).toBe('ann@example.com')
    expect(document.email).toBe('Ann@Example.COM')
    expect(decode(collections.USERS, throughBson(document))).not.toHaveProperty('email_lower')
  })

  it('refuses to store a record whose own id is not a canonical ObjectId', () => {
    expect(() => encode(collections.QUOTAS, aQuota(companyId, { id: 'quota-1' }))).toThrow(TypeError)
    expect(() => toObjectId(newId().toUpperCase())).toThrow(TypeError)
  })

  it('looks up a malformed id as a string, which no stored ObjectId equals', () => {
    const id = newId()
    expect(lookupId(id)).toStrictEqual(new ObjectId(id))
    expect(lookupId('nope')).toBe('nope')
  })
})

/** MongoDB's largest document. */
const DOCUMENT_LIMIT = 16 * 1024 * 1024

const aPayload = (items: unknown[]) => ({
  id: newId(),
  company_id: companyId,
  import_id: newId(),
  items,
  options: { all: true, keep_overrides: false },
  received_at: minute(0),
  bytes: 0,
})

describe('mongo import payloads: stored in parts under the document limit', () => {
  it('keeps a payload of usual size in its one document, and reads it back exactly', () => {
    const payload = aPayload([{ email: 'a@b.c', name: 'Zoë ✓' }, null, 3, [1.5, -2]])
    const { payload: document, parts } = storedPayload(payload)
    expect(parts).toStrictEqual([])
    expect(payloadFrom(throughBson(document), [])).toStrictEqual(payload)
  })

  it('splits the largest body the default limit allows into documents that each fit, and joins them back', () => {
    const items = heavyItems(LARGEST_BODY_BYTES)
    // As an array, the items alone would be several times too large for one document.
    expect(calculateObjectSize({ items })).toBeGreaterThan(4 * DOCUMENT_LIMIT)
    const payload = aPayload(items)
    const { payload: document, parts } = storedPayload(payload)
    expect(parts).toHaveLength(Math.ceil(JSON.stringify(items).length / PART_BYTES) - 1)
    for (const stored of [document, ...parts]) expect(calculateObjectSize(stored)).toBeLessThan(DOCUMENT_LIMIT)
    // Parts may come back in any order.
    const read = payloadFrom(throughBson(document), parts.toReversed().map(throughBson))
    // Compared as text: a deep comparison of millions of numbers takes long.
    expect(JSON.stringify(read.items)).toBe(JSON.stringify(items))
    expect({ ...read, items: [] }).toStrictEqual({ ...payload, items: [] })
  })

  it('refuses to read a payload with a part missing', () => {
    const { payload: document, parts } = storedPayload(aPayload(heavyItems(PART_BYTES + 1)))
    expect(parts).toHaveLength(1)
    expect(() => payloadFrom(document, [])).toThrow(/1 of its 2 parts/)
  })

  it('reads a payload stored before parts existed, whose items are an array', () => {
    const payload = aPayload([{ email: 'a@b.c' }])
    expect(payloadFrom(throughBson(encode(collections.IMPORT_PAYLOADS, payload)), [])).toStrictEqual(payload)
  })
})

describe('mongo filters', () => {
  it('name the company in every filter on company data', () => {
    const filters = [
      inCompany(companyId),
      inCompany(companyId, { environment: 'live' }),
      byId(companyId, newId()),
      inTable(companyId, tableId),
      pageFilter(companyId, { quota_id: lookupId(quotaId) }, { limit: 10, afterId: newId() }),
    ]
    for (const filter of filters) expect(filter.company_id).toStrictEqual(new ObjectId(companyId))
  })

  it('do not let conditions name another company', () => {
    const other = newId()
    expect(inCompany(companyId, { status: 'x', company_id: new ObjectId(other) })).toStrictEqual({
      status: 'x',
      company_id: new ObjectId(companyId),
    })
    expect(byId(companyId, newId()).company_id).toStrictEqual(new ObjectId(companyId))
  })

  it('translate a v2 window into cursor and time bounds', () => {
    const afterId = newId()
    expect(pageFilter(companyId, { environment: 'live' }, { limit: 5 })).toStrictEqual({
      company_id: new ObjectId(companyId),
      environment: 'live',
    })
    expect(
      pageFilter(
        companyId,
        { environment: 'live' },
        { limit: 5, afterId, modifiedAfter: { at: minute(1), inclusive: false }, modifiedBefore: { at: minute(4), inclusive: true } },
      ),
    ).toStrictEqual({
      company_id: new ObjectId(companyId),
      environment: 'live',
      _id: { $gt: new ObjectId(afterId) },
      modified_at: { $gt: minute(1), $lte: minute(4) },
    })
    expect(
      pageFilter(
        companyId,
        {},
        { limit: 5, modifiedAfter: { at: minute(2), inclusive: true }, modifiedBefore: { at: minute(3), inclusive: false } },
      ),
    ).toMatchObject({ modified_at: { $gte: minute(2), $lt: minute(3) } })
  })

  it("state the filter expression of the partial index company_plan_cell whenever they select a plan's results, so that MongoDB uses it", () => {
    const [planId, userId] = [newId(), newId()]
    const selections = [undefined, { cells: [{ user_id: userId, period: '2026-03' }] }, { userIds: [userId] }, {}]
    for (const collection of [collections.STATEMENTS.collection, collections.COMMISSION_LINES.collection]) {
      const index = INDEXES.get(collection)?.find((item) => item.name === 'company_plan_cell')
      expect(index?.partialFilterExpression, collection).toBeDefined()
      for (const only of selections) {
        const filter = ofPlan(companyId, planId, only)
        // An equality alone does not imply the expression: MongoDB needs each of its conditions in the query itself.
        for (const [field, condition] of Object.entries(index?.partialFilterExpression ?? {}))
          expect(filter[field]).toMatchObject(condition)
        expect(filter.plan_id.$eq).toStrictEqual(new ObjectId(planId))
      }
    }
  })

  it('read a cursor in upper-case hex as the same ObjectId, and refuse anything else', () => {
    const id = newId()
    expect(cursorId(id.toUpperCase())).toStrictEqual(new ObjectId(id))
    expect(() => cursorId('zz')).toThrow(TypeError)
  })
})

/** A collection that takes every index asked of it, for `ensureIndexes`. */
const indexedCollection = () => ({ createIndexes: async () => [], dropIndex: async () => true })

describe('mongo indexes', () => {
  const all = new Map([...INDEXES, ...EXTRA_INDEXES])
  const keysOf = (collection: string) => (all.get(collection) ?? []).map((index) => Object.keys(index.key))
  const unique = (collection: string) => (all.get(collection) ?? []).filter((index) => index.unique).map((index) => Object.keys(index.key))

  it('cover every collection, with unique names per collection', () => {
    for (const codec of [collections.COMPANIES, collections.COMPANY_DELETIONS, ...collections.COMPANY_COLLECTIONS]) {
      expect(all.has(codec.collection), codec.collection).toBe(true)
    }
    for (const [collection, indexes] of all) {
      const names = indexes.map((index) => index.name)
      expect(new Set(names).size, collection).toBe(names.length)
    }
  })

  it('start with company_id on company data, but for the key hash and the workers’ scans (runnable imports, imports past their retention)', () => {
    const exceptions = new Set(['api_keys.hash_unique', 'imports.status_id', 'imports.status_finished_at'])
    for (const codec of collections.COMPANY_COLLECTIONS) {
      for (const index of all.get(codec.collection) ?? []) {
        if (exceptions.has(`${codec.collection}.${index.name}`)) continue
        expect(Object.keys(index.key)[0], `${codec.collection}.${index.name}`).toBe('company_id')
      }
    }
  })

  it('enforce the uniqueness rules of the port', () => {
    expect(unique('users')).toContainEqual(['company_id', 'email_lower'])
    expect(unique('quota_values')).toContainEqual(['company_id', 'quota_id', 'user_id', 'period'])
    expect(unique('data_table_records')).toContainEqual(['company_id', 'table_id', 'external_id'])
    expect(unique('api_keys')).toContainEqual(['hash'])
  })

  it('drop at start-up the collection of calls by request key an earlier release made, which no deletion of a company reaches', async () => {
    const dropped: string[] = []
    const db = {
      collection: indexedCollection,
      createCollection: async () => ({}),
      dropCollection: async (name: string) => dropped.push(name) > 0,
    }
    await ensureIndexes(db as unknown as Db, EXTRA_INDEXES)
    expect(dropped).toStrictEqual(['import_requests'])
    expect(collections.COMPANY_COLLECTIONS.map((codec) => codec.collection)).not.toContain('import_requests')
  })

  it('serve each v2 page and the imports’ list with (company, sequence, _id) and expire rate windows by TTL', () => {
    expect(keysOf('statements')).toContainEqual(['company_id', 'environment', '_id'])
    expect(keysOf('commission_lines')).toContainEqual(['company_id', 'table_id', '_id'])
    expect(keysOf('quota_values')).toContainEqual(['company_id', 'quota_id', '_id'])
    expect(keysOf('imports')).toContainEqual(['company_id', '_id'])
    expect(all.get('rate_windows')).toStrictEqual([{ key: { purge_at: 1 }, name: 'purge_at_ttl', expireAfterSeconds: 0 }])
  })
})

/** True when the fields of `key` start with those of `prefix`, in order. */
const startsWith = (key: object, prefix: object) => Object.keys(prefix).every((field, index) => Object.keys(key)[index] === field)

/** True when `filter` gives every field of the collection's shard key one value (an equality, not an operator). */
const namesShardKey = (collection: string, filter: Document) =>
  Object.keys(collections.SHARD_KEYS.get(collection)!).every(
    (field) => filter[field] instanceof ObjectId || typeof filter[field] === 'string',
  )

describe('mongo sharding', () => {
  const all = new Map([...INDEXES, ...EXTRA_INDEXES])

  it('gives every collection of company data a shard key, and an index that starts with it (shardCollection needs one)', () => {
    for (const codec of collections.COMPANY_COLLECTIONS) {
      if (codec === collections.API_KEYS) continue
      const shardKey = collections.SHARD_KEYS.get(codec.collection)
      expect(shardKey, codec.collection).toBeDefined()
      expect(Object.keys(shardKey!)[0], codec.collection).toBe('company_id')
      expect(
        (all.get(codec.collection) ?? []).some((index) => startsWith(index.key, shardKey!)),
        codec.collection,
      ).toBe(true)
    }
  })

  it('starts every unique index of a sharded collection with its shard key, or MongoDB could not enforce it', () => {
    for (const [collection, shardKey] of collections.SHARD_KEYS) {
      for (const index of (all.get(collection) ?? []).filter((item) => item.unique)) {
        expect(startsWith(index.key, shardKey), `${collection}.${index.name}`).toBe(true)
      }
    }
  })

  it('names the whole shard key in the filter of every upsert', () => {
    expect(namesShardKey('import_locks', lockFilter(companyId, 'claim'))).toBe(true)
    const record = aRecord(companyId, tableId)
    const [saved] = saveRecordsOperations(companyId, [record]) as Array<{ replaceOne: { filter: Document } }>
    expect(namesShardKey('data_table_records', saved.replaceOne.filter)).toBe(true)
    expect(saved.replaceOne.filter).toStrictEqual({
      table_id: new ObjectId(tableId),
      _id: new ObjectId(record.id),
      company_id: new ObjectId(companyId),
    })
    const [upserted] = upsertRecordsOperations(companyId, [record]) as Array<{ updateOne: { filter: Document } }>
    expect(namesShardKey('data_table_records', upserted.updateOne.filter)).toBe(true)
    // Updates by (company, id) name the whole key of the collections sharded by company, or by (company, _id).
    for (const collection of ['quota_values', 'statements', 'commission_lines', 'imports', 'users']) {
      expect(namesShardKey(collection, byId(companyId, newId())), collection).toBe(true)
    }
  })
})

describe('mongo imports and rate windows: the update documents', () => {
  it('makes an import runnable when its window closed or its lease expired, or either ends further ahead than any the service makes', () => {
    const now = minute(10)
    const live = { $gt: now, $lte: latestImportDeadline(now) }
    expect(runnable(now)).toStrictEqual({
      $or: [
        { status: 'scheduled', window_ends_at: { $not: live } },
        { status: 'started', lease_expires_at: { $not: live } },
      ],
    })
  })

  it('claims by stamping owner and lease, keeping the first launch time and counting the attempt', () => {
    expect(claimUpdate('worker-1', minute(10), minute(11))).toStrictEqual([
      {
        $set: {
          status: 'started',
          lease_owner: 'worker-1',
          lease_expires_at: minute(11),
          launched_at: { $ifNull: ['$launched_at', minute(10)] },
          attempts: { $add: [{ $ifNull: ['$attempts', 0] }, 1] },
        },
      },
    ])
  })

  it('counts a hit in an open window and restarts a closed, missing or stretched one, from one stored resets_at', () => {
    const now = new Date('2026-06-01T10:00:00.000Z')
    const end = new Date('2026-06-01T10:00:01.000Z')
    // Open: ends after now, and no further than two windows ahead (one that does was opened before the clock stepped back).
    const open = { $and: [{ $gt: ['$resets_at', now] }, { $lte: ['$resets_at', new Date('2026-06-01T10:00:02.000Z')] }] }
    const [stage] = hitPipeline(1000, now)
    expect(stage.$set.hits).toStrictEqual({ $cond: [open, { $add: ['$hits', 1] }, 1] })
    expect(stage.$set.resets_at).toStrictEqual({ $cond: [open, '$resets_at', end] })
    // The TTL field is computed from the server's clock, which the TTL monitor reads.
    expect(stage.$set.purge_at.$add[0]).toBe('$$NOW')
    const [batch] = hitPipeline(1000, now, 4)
    expect(batch.$set.hits).toStrictEqual({ $cond: [open, { $add: ['$hits', 4] }, 4] })
  })

  it('counts the unfinished imports, 0 for a status with none', () => {
    expect(countsFrom([{ _id: 'scheduled', n: 1 }])).toStrictEqual({ scheduled: 1, started: 0 })
  })
})

describe('mongo deletes by id', () => {
  it('deletes more ids than one command may hold (16 MiB), in commands that each fit, all in one transaction', async () => {
    // About 900,000 ObjectIds: some 18 MB as one `$in` list.
    const ids = Array.from({ length: 900_000 }, (_, index) => index.toString(16).padStart(24, '0'))
    // A store outside any transaction, whose one transaction runs its work once and whose collection records each deleteMany.
    const session = { withTransaction: (work: (session: unknown) => Promise<unknown>) => work(session), endSession: async () => {} }
    let sessions = 0
    const deletes: Array<{ filter: Document; options: Document }> = []
    const context = {
      connection: {
        client: { startSession: () => (sessions++, session) },
        db: { collection: () => ({ deleteMany: async (filter: Document, options: Document) => deletes.push({ filter, options }) }) },
      },
      transaction: null,
      state: { closed: false, writes: 0 },
    } as unknown as MongoContext
    await deleteByIds(context, collections.COMMISSION_LINES, companyId, ids)
    expect(sessions).toBe(1)
    expect(deletes.length).toBeGreaterThan(1)
    for (const { filter, options } of deletes) {
      expect(calculateObjectSize(filter)).toBeLessThan(DOCUMENT_LIMIT)
      expect(filter.company_id).toStrictEqual(new ObjectId(companyId))
      expect(options.session).toBe(session)
    }
    const deleted = deletes.flatMap(({ filter }) => (filter._id.$in as ObjectId[]).map((id) => id.toHexString()))
    expect(deleted.join()).toBe(ids.join())
  })
})

/** The error a unique index answers a second insert of the same key with. */
const duplicateKeyError = () => new MongoServerError({ message: 'E11000 duplicate key error', code: 11000 })

/** The error of an operation that found no primary to select (a failover under way). */
const selectionTimedOut = () =>
  new MongoServerSelectionError('Server selection timed out after 30000 ms', { error: undefined } as unknown as TopologyDescription)

describe('mongo connection helpers', () => {
  it('reads the database a connection string names', () => {
    expect(databaseInUrl('mongodb://db:27017/commission?replicaSet=rs0')).toBe('commission')
    expect(databaseInUrl('mongodb://a:1,b:2,c:3/reports')).toBe('reports')
    expect(databaseInUrl('mongodb+srv://user:p%40ss@cluster.example.net/app?retryWrites=true')).toBe('app')
    expect(databaseInUrl('mongodb://db:27017/?replicaSet=rs0')).toBeNull()
    expect(databaseInUrl('mongodb://db:27017')).toBeNull()
  })

  it('points a test connection string at a database of its own, keeping its options', () => {
    expect(withDatabase('mongodb://localhost:27017/?replicaSet=rs0', 't1')).toBe('mongodb://localhost:27017/t1?replicaSet=rs0')
    expect(withDatabase('mongodb://a:1,b:2/old', 't2')).toBe('mongodb://a:1,b:2/t2')
    expect(withDatabase('mongodb://localhost:27017', 't3')).toBe('mongodb://localhost:27017/t3')
  })

  it('writes each saved plan, statement or line under its own company, not the first one of the batch', () => {
    const [first, second] = [newId(), newId()]
    const plans = [
      { id: newId(), company_id: first, name: 'One' },
      { id: newId(), company_id: second, name: 'Two' },
    ]
    const operations = replaceOwnById(collections.PLANS, plans).map((operation) => (operation as { replaceOne: any }).replaceOne)
    expect(operations.map((operation) => operation.filter)).toEqual(plans.map((plan) => byId(plan.company_id, plan.id)))
    expect(operations.map((operation) => operation.replacement.company_id)).toEqual([toObjectId(first), toObjectId(second)])
  })

  it("creates a lock document that a concurrent first use inserted too: the loser's duplicate key is tried again, not a conflict", async () => {
    // The collection of a store whose first upsert loses the race to another process's.
    const answers: Array<() => Promise<unknown>> = [() => Promise.reject(duplicateKeyError()), () => Promise.resolve({ matchedCount: 1 })]
    const upserts: Document[] = []
    const collection = {
      updateOne: (filter: Document) => {
        upserts.push(filter)
        return answers.shift()!()
      },
    }
    const context = {
      connection: { db: { collection: () => collection } },
      transaction: null,
      state: { closed: false, writes: 0 },
    } as unknown as MongoContext
    const company = newId()
    await expect(ensureLock(context, company, 'transaction')).resolves.toBeUndefined()
    expect(upserts).toEqual([lockFilter(company, 'transaction'), lockFilter(company, 'transaction')])
    // Twice lost is not a race a second try settles: it is a conflict, as the port states it.
    answers.push(
      () => Promise.reject(duplicateKeyError()),
      () => Promise.reject(duplicateKeyError()),
    )
    await expect(ensureLock(context, company, 'transaction')).rejects.toBeInstanceOf(StoreConflictError)
  })

  it('turns a duplicate key error into StoreConflictError and keeps every other error', () => {
    const duplicate = duplicateKeyError()
    const conflict = new MongoServerError({ message: 'WriteConflict', code: 112 })
    expect(isDuplicateKey(duplicate)).toBe(true)
    expect(toPortError(duplicate)).toBeInstanceOf(StoreConflictError)
    expect(toPortError(conflict)).toBe(conflict)
    const plain = new Error('boom')
    expect(toPortError(plain)).toBe(plain)
  })

  it('keeps a transient error as the driver threw it inside a transaction, for withTransaction to run it again', () => {
    const transient = new MongoServerError({ message: 'WriteConflict', code: 112, errorLabels: ['TransientTransactionError'] })
    expect(toPortErrorInTransaction(transient)).toBe(transient)
    expect(toPortErrorInTransaction(duplicateKeyError())).toBeInstanceOf(StoreConflictError)
    // Once withTransaction gave up, the transaction was aborted: nothing committed, and the work may run later.
    const busy = toPortError(transient)
    expect(busy).toBeInstanceOf(StoreBusyError)
    expect((busy as Error).cause).toBe(transient)
    // A commit whose result stayed unknown may have committed: not told as busy, nor kept as an internal error.
    const unknown = new MongoServerError({ message: 'timeout', code: 50, errorLabels: ['UnknownTransactionCommitResult'] })
    const unconfirmed = toPortError(unknown)
    expect(unconfirmed).toBeInstanceOf(StoreUnconfirmedError)
    expect((unconfirmed as Error).cause).toBe(unknown)
    expect(toPortErrorOfWrite(unknown)).toBeInstanceOf(StoreUnconfirmedError)
  })

  it('takes a commit whose retry could not select a server for one whose result is unknown, but not the work failing so', async () => {
    // The driver's own withTransaction, over a session whose commit fails as lib/sessions.js fails it when the first
    // attempt lost its connection and the retry found no primary: the retry's server selection error, unlabelled.
    const driver = new MongoClient('mongodb://db-1:27017/?replicaSet=rs0')
    let commit: Error | null = null
    const client = {
      startSession: () => {
        const session = driver.startSession()
        // The driver's own commit of a transaction that sent nothing, which ends it, then the failure.
        const ended = session.commitTransaction.bind(session)
        session.commitTransaction = async () => {
          await ended()
          throw commit
        }
        return session
      },
    }
    const context = { connection: { client }, transaction: null, state: { closed: false, writes: 0 } } as unknown as MongoContext
    try {
      commit = selectionTimedOut()
      const committed = atomically(context, async () => 'written')
      await expect(committed).rejects.toBeInstanceOf(StoreUnconfirmedError)
      await expect(committed).rejects.toHaveProperty('cause', commit)
      // The work could not reach the deployment: nothing was committed.
      const lost = selectionTimedOut()
      const refused = atomically(context, () => Promise.reject(lost))
      await expect(refused).rejects.toBeInstanceOf(StoreBusyError)
      await expect(refused).rejects.toHaveProperty('cause', lost)
      // A commit refused as transient runs the transaction again, whose work then finds no primary: nothing was
      // committed, though the first run's work had resolved.
      commit = new MongoServerError({ message: 'WriteConflict', code: 112, errorLabels: ['TransientTransactionError'] })
      let attempts = 0
      const work = async () => {
        if (++attempts === 2) throw selectionTimedOut()
        return 'written'
      }
      await expect(atomically(context, work)).rejects.toBeInstanceOf(StoreBusyError)
      expect(attempts).toBe(2)
    } finally {
      await driver.close()
    }
  })

  it('turns an operation the deployment could not serve (connection lost, no primary, a node stepping down) into StoreBusyError', () => {
    const noPrimary = { error: undefined } as unknown as TopologyDescription
    const unavailable = [
      new MongoNetworkError('connection 4 to db-1:27017 closed'),
      new MongoNetworkTimeoutError('connection 5 to db-1:27017 timed out'),
      new MongoServerSelectionError('Server selection timed out after 30000 ms', noPrimary),
      new MongoServerError({ message: 'not primary', code: 10107 }),
      new MongoServerError({ message: 'operation was interrupted because of a replica set state change', code: 11602 }),
      new MongoServerError({ message: 'shutdown in progress', code: 91, errorLabels: ['RetryableWriteError'] }),
      new MongoServerError({ message: 'the server is overloaded', code: 1, errorLabels: ['SystemOverloadedError'] }),
    ]
    for (const error of unavailable) {
      const busy = toPortError(error)
      expect(busy, error.message).toBeInstanceOf(StoreBusyError)
      expect((busy as Error).cause).toBe(error)
      // A write outside a transaction may have been applied before its answer was lost: not "nothing was done".
      const unconfirmed = toPortErrorOfWrite(error)
      expect(unconfirmed, error.message).toBeInstanceOf(StoreUnconfirmedError)
      expect(unconfirmed).not.toBeInstanceOf(StoreBusyError)
      expect((unconfirmed as Error).cause).toBe(error)
      // Inside a transaction the driver's own error reaches withTransaction, which labels it transient and runs it again.
      expect(toPortErrorInTransaction(error)).toBe(error)
    }
    // A commit whose answer was lost may have committed.
    const lostCommit = new MongoNetworkError('connection 6 to db-1:27017 closed')
    lostCommit.addErrorLabel('UnknownTransactionCommitResult')
    expect(toPortError(lostCommit)).toBeInstanceOf(StoreUnconfirmedError)
    expect(toPortErrorOfWrite(lostCommit)).toBeInstanceOf(StoreUnconfirmedError)
    // A write concern error comes after the primary applied the write, which may or may not stay: a write's is
    // unconfirmed, never busy; one of a write safe to make again (toPortError's: a lock, a rate window's hit) is busy.
    const concern = new MongoWriteConcernError({ writeConcernError: { code: 91, errmsg: 'waiting for replication interrupted' }, ok: 1 })
    expect(toPortError(concern)).toBeInstanceOf(StoreBusyError)
    const unconfirmed = toPortErrorOfWrite(concern)
    expect(unconfirmed).toBeInstanceOf(StoreUnconfirmedError)
    expect((unconfirmed as Error).cause).toBe(concern)
    // Kept: a closed client is this process's own doing; any other server error is not the deployment's state.
    const kept = [new MongoTopologyClosedError(), new MongoServerError({ message: 'BadValue', code: 2 })]
    for (const error of kept) {
      expect(toPortError(error), error.message).toBe(error)
      expect(toPortErrorOfWrite(error), error.message).toBe(error)
    }
  })

  it("answers a bulk write's write concern error, which carries the code of a node stepping down, as applied: a write's unconfirmed, one safe to make again busy", () => {
    // Built as the driver builds it (lib/bulk/common.js, executeCommands): the write concern error's code becomes the
    // bulk error's own, and its result holds the write concern error.
    const driver = createRequire(import.meta.url)('mongodb/lib/bulk/common.js') as {
      BulkWriteResult: new (bulkResult: Document, isOrdered: boolean) => BulkWriteResult
      WriteConcernError: new (error: Document) => WriteConcernError
    }
    const bulkOf = (writeConcernErrors: WriteConcernError[]) =>
      new driver.BulkWriteResult(
        {
          ok: 1,
          writeErrors: [],
          writeConcernErrors,
          insertedIds: [],
          nInserted: 2,
          nUpserted: 0,
          nMatched: 0,
          nModified: 0,
          nRemoved: 0,
          upserted: [],
        },
        true,
      )
    for (const code of [91, 189, 11602]) {
      const concern = new driver.WriteConcernError({ code, errmsg: 'waiting for replication interrupted' })
      const applied = new MongoBulkWriteError({ message: concern.errmsg!, code }, bulkOf([concern]))
      expect(toPortError(applied)).toBeInstanceOf(StoreBusyError)
      const unconfirmed = toPortErrorOfWrite(applied)
      expect(unconfirmed).toBeInstanceOf(StoreUnconfirmedError)
      expect((unconfirmed as Error).cause).toBe(applied)
      // Without a write concern error, the same code is a node that could not serve the write.
      const refused = new MongoBulkWriteError({ message: 'interrupted', code }, bulkOf([]))
      expect(toPortError(refused)).toBeInstanceOf(StoreBusyError)
    }
  })

  it('tells a write outside a transaction that an aborted transaction of its own wrote nothing, and a broken uniqueness rule', () => {
    const aborted = new MongoServerError({ message: 'WriteConflict', code: 112, errorLabels: ['TransientTransactionError'] })
    expect(toPortErrorOfWrite(aborted)).toBeInstanceOf(StoreBusyError)
    expect(toPortErrorOfWrite(duplicateKeyError())).toBeInstanceOf(StoreConflictError)
  })

  it("answers StoreBusyError when a worker's read of an import's payloads lost its connection outside a transaction", async () => {
    const lost = new MongoNetworkError('connection 7 to db-1:27017 closed')
    const payloads = { find: () => ({ toArray: () => Promise.reject(lost) }) }
    const context = {
      connection: { db: { collection: () => payloads } },
      transaction: null,
      state: { closed: false, writes: 0 },
    } as unknown as MongoContext
    const read = mongoImports(context).payloads(newId(), newId())
    await expect(read).rejects.toBeInstanceOf(StoreBusyError)
    await expect(read).rejects.toHaveProperty('cause', lost)
  })

  it('answers the purge of finished imports StoreBusyError when its read lost its connection, and unconfirmed when its delete did', async () => {
    const lost = new MongoNetworkError('connection 15 to db-1:27017 closed')
    const expired = [{ _id: new ObjectId(), company_id: new ObjectId(companyId) }]
    let finding: () => Promise<Document[]> = () => Promise.reject(lost)
    const imports = { find: () => ({ toArray: () => finding() }), deleteMany: () => Promise.reject(lost) }
    const context = {
      connection: { db: { collection: () => imports } },
      transaction: null,
      state: { closed: false, writes: 0 },
    } as unknown as MongoContext
    const purge = () => mongoImports(context).purgeFinished('2026-01-01T00:00:00.000Z', 1000)
    // The read changed nothing.
    await expect(purge()).rejects.toBeInstanceOf(StoreBusyError)
    finding = async () => expired
    await expect(purge()).rejects.toBeInstanceOf(StoreUnconfirmedError)
  })

  it('counts requests in the instance alone, refusing and failing none, while the rate windows cannot be reached', async () => {
    const lost = new MongoNetworkError('connection 10 to db-1:27017 closed')
    const windows = { findOneAndUpdate: () => Promise.reject(lost), findOne: () => Promise.reject(lost) }
    const rateLimits = new MongoRateLimits({ collection: () => windows } as unknown as Db, () => false)
    const now = new Date('2026-06-01T00:00:00Z')
    await expect(rateLimits.hit('company:1', 1000, now, 4)).rejects.toBeInstanceOf(StoreBusyError)
    await expect(rateLimits.peek('company:1', now)).rejects.toBeInstanceOf(StoreBusyError)
    // @fastify/rate-limit (skipOnError false) would answer 500 to a request whose count rejected.
    const counts = new BatchedRateCounts((key, windowMs, at, count) => rateLimits.hit(key, windowMs, at, count))
    for (let request = 1; request <= 10; request++) {
      await expect(counts.count('company:1', 1000, 80, now)).resolves.toEqual({ current: request, ttl: 1000 })
    }
  })

  it("answers StoreBusyError when a company's deletion could not be served or confirmed, marked until deleting it again finishes it", async () => {
    // A client told "check before sending it again" would find the company gone and stop, its documents left behind.
    const lost = new MongoNetworkError('connection 12 to db-1:27017 closed')
    let commit: Error | null = null
    let failing: string | null = collections.USERS.collection
    const removed: string[] = []
    // The company's lock, as each attempt wrote it: in the deletion's transaction (a session) or outside it.
    const lockWrites: { filter: Document; inTransaction: boolean }[] = []
    const session = {
      withTransaction: async (work: (session: unknown) => Promise<unknown>) => {
        const result = await work(session)
        if (commit) throw commit
        return result
      },
      endSession: async () => {},
    }
    let companies = 1
    // The marks of deletions under way (`company_deletions`), by id; each written in a transaction, or not.
    const marks = new Map<string, { inTransaction: boolean }>()
    const context = {
      connection: {
        client: { startSession: () => session },
        db: {
          collection: (name: string) => ({
            deleteOne: async (filter: Document) => {
              if (name === collections.COMPANY_DELETIONS.collection) return { deletedCount: marks.delete(String(filter._id)) ? 1 : 0 }
              return { deletedCount: companies-- > 0 ? 1 : 0 }
            },
            replaceOne: async (filter: Document, _replacement: Document, options: { session?: unknown }) => {
              marks.set(String(filter._id), { inTransaction: options.session !== undefined })
              return { matchedCount: 1 }
            },
            find: () => ({ toArray: async () => [...marks.keys()].toSorted().map((id) => ({ _id: new ObjectId(id) })) }),
            updateOne: async (filter: Document, _update: Document, options: { session?: unknown }) => {
              if (name === collections.IMPORT_LOCKS.collection) lockWrites.push({ filter, inTransaction: options.session !== undefined })
              return { matchedCount: 1 }
            },
            deleteMany: async () => {
              if (name === failing) throw lost
              removed.push(name)
            },
          }),
        },
      },
      transaction: null,
      state: { closed: false, writes: 0 },
    } as unknown as MongoContext
    const company = newId()
    // The company and its keys are gone; its users could not be deleted.
    const cut = mongoCompanies(context).delete(company)
    await expect(cut).rejects.toBeInstanceOf(StoreBusyError)
    await expect(cut).rejects.toHaveProperty('cause', lost)
    // Its lock made, then written in the transaction that deleted it: a transaction of the company that began
    // before conflicts with the deletion, rather than commit its documents after the collections were swept.
    expect(lockWrites).toEqual([
      { filter: lockFilter(company, COMPANY_LOCK), inTransaction: false },
      { filter: lockFilter(company, COMPANY_LOCK), inTransaction: true },
    ])
    // Marked in that transaction, and left: a worker finds the deletion (`unfinishedDeletions`) and finishes it.
    expect(marks).toStrictEqual(new Map([[company, { inTransaction: true }]]))
    await expect(mongoCompanies(context).unfinishedDeletions()).resolves.toStrictEqual([company])
    // The company's own transaction whose commit stayed unknown: it may be gone too.
    const lostCommit = new MongoNetworkError('connection 13 to db-1:27017 closed')
    lostCommit.addErrorLabel('UnknownTransactionCommitResult')
    commit = lostCommit
    await expect(mongoCompanies(context).delete(company)).rejects.toBeInstanceOf(StoreBusyError)
    // A stopping worker's sweep stops before its next collection, the mark left.
    commit = null
    failing = null
    removed.length = 0
    const stopped = new AbortController()
    stopped.abort(new Error('the worker stops'))
    await expect(mongoCompanies(context).delete(company, { signal: stopped.signal })).rejects.toThrow('the worker stops')
    expect(removed).toEqual([collections.API_KEYS.collection])
    await expect(mongoCompanies(context).unfinishedDeletions()).resolves.toStrictEqual([company])
    // Sent again, the deletion removes what was left, and its mark last, and answers that there was no company.
    removed.length = 0
    await expect(mongoCompanies(context).delete(company)).resolves.toBe(false)
    expect(removed).toEqual([collections.API_KEYS, ...collections.COMPANY_COLLECTIONS].map((codec) => codec.collection))
    await expect(mongoCompanies(context).unfinishedDeletions()).resolves.toStrictEqual([])
  })

  it("counts a company's deletion as a write once the company and its keys are gone, before its documents are swept", async () => {
    // The instance's cached authentications move with the count (`PrincipalCache`): counted only once the sweep is
    // over, a key of the company would still be taken by the instance that deleted it, for up to half a second.
    const session = { withTransaction: async (work: (session: unknown) => Promise<unknown>) => work(session), endSession: async () => {} }
    const state = { closed: false, writes: 0 }
    const sweepReached = gate()
    const sweepGoesOn = gate()
    const context = {
      connection: {
        client: { startSession: () => session },
        db: {
          collection: (name: string) => ({
            deleteOne: async () => ({ deletedCount: 1 }),
            replaceOne: async () => ({ matchedCount: 1 }),
            updateOne: async () => ({ matchedCount: 1 }),
            deleteMany: async () => {
              if (name !== collections.USERS.collection) return
              sweepReached.open()
              await sweepGoesOn.promise
            },
          }),
        },
      },
      transaction: null,
      state,
    } as unknown as MongoContext
    const deletion = mongoCompanies(context).delete(newId())
    await sweepReached.promise
    expect(state.writes).toBeGreaterThan(0)
    sweepGoesOn.open()
    await expect(deletion).resolves.toBe(true)
  })

  it("answers the controlled clock's advance MongoDB could not serve as unconfirmed, its read and raise as busy", async () => {
    const lost = new MongoNetworkError('connection 14 to db-1:27017 closed')
    const clock = { findOne: () => Promise.reject(lost), findOneAndUpdate: () => Promise.reject(lost) }
    const context = {
      connection: { db: { collection: () => clock } },
      transaction: null,
      state: { closed: false, writes: 0 },
    } as unknown as MongoContext
    const offsets = mongoClockOffset(context)
    // A `$inc` the driver may have applied before the answer was lost: done again, the clock would move twice.
    const advance = offsets.advance(60_000)
    await expect(advance).rejects.toBeInstanceOf(StoreUnconfirmedError)
    await expect(advance).rejects.toHaveProperty('cause', lost)
    // A read, and a `$max`, are the same done twice.
    await expect(offsets.read()).rejects.toBeInstanceOf(StoreBusyError)
    await expect(offsets.raiseTo(60_000)).rejects.toBeInstanceOf(StoreBusyError)
  })

  it("answers StoreUnconfirmedError, never StoreBusyError, when an API key's insert lost its connection outside a transaction", async () => {
    // The driver retried the insert after a failover and lost the answer: the first attempt may have stored the key.
    const lost = new MongoNetworkError('connection 8 to db-1:27017 closed')
    const keys = { insertOne: () => Promise.reject(lost), findOne: () => Promise.reject(lost) }
    const context = {
      connection: { db: { collection: () => keys } },
      transaction: null,
      state: { closed: false, writes: 0 },
    } as unknown as MongoContext
    const insert = mongoApiKeys(context).insert(anApiKey(companyId, newId()))
    await expect(insert).rejects.toBeInstanceOf(StoreUnconfirmedError)
    await expect(insert).rejects.toHaveProperty('cause', lost)
    // Its read, which changed nothing, is busy: nothing was done.
    await expect(mongoApiKeys(context).findByHash('ab'.repeat(32))).rejects.toBeInstanceOf(StoreBusyError)
  })
})
