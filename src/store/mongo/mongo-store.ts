import type { Store } from '../port.ts'
import { repositoriesOver } from '../shared/repositories.ts'
import { SerialQueue } from '../shared/serial-queue.ts'
import { CLOCK_INDEXES } from './clock-offset.ts'
import { ORIGIN_INDEXES } from './company-origins.ts'
import { connectMongo, inTransaction, toPortError } from './connection.ts'
import { call, counted, type MongoContext } from './context.ts'
import { IMPORT_INDEXES } from './imports.ts'
import { ensureIndexes } from './indexes.ts'
import { COMPANY_LOCK, ensureLock, writeLock } from './locks.ts'
import { MongoRateLimits, RATE_WINDOW_INDEXES } from './rate-limits.ts'
import * as repositories from './repositories.ts'

export interface MongoStoreOptions {
  /** The database to use; by default the one MONGODB_URL names, else `commission-api`. */
  database?: string
}

/**
 * Items one transaction applies at most (see `Store.itemsPerTransaction`): MongoDB aborts a transaction after
 * `transactionLifetimeLimitSeconds`, 60 s by default. Two of the largest record calls (10,000 each) per
 * transaction keep far from it by estimate: not measured here, for no MongoDB can run on the machine where
 * this was written (docs/scaling.md).
 */
const ITEMS_PER_TRANSACTION = 20_000

/** The indexes of the collections added beside the foundation's (imports, rate windows, clock, company origins). */
export const EXTRA_INDEXES = new Map([...IMPORT_INDEXES, ...RATE_WINDOW_INDEXES, ...CLOCK_INDEXES, ...ORIGIN_INDEXES])

/**
 * Opens the MongoDB store: connects, refuses a deployment that cannot run transactions, and creates every
 * collection and index (idempotently, so every instance does it at start-up).
 */
export async function openMongoStore(url: string, options: MongoStoreOptions = {}): Promise<Store> {
  const connection = await connectMongo(url, options.database)
  try {
    await ensureIndexes(connection.db, EXTRA_INDEXES)
  } catch (error) {
    await connection.client.close()
    throw error
  }
  const state = { closed: false, writes: 0 }
  return mongoStore({ connection, transaction: null, state }, new SerialQueue(), new MongoRateLimits(connection.db, () => state.closed))
}

/**
 * The store over `context`: the connection's, or inside a transaction the transaction's.
 * `transactions` runs this process's transactions one at a time, as the port requires: MongoDB's snapshot
 * isolation alone would let two transactions that read the same rows and write different ones both commit.
 * Across processes, transactions that write the same documents conflict and are run again by
 * `withTransaction`; those that name a company all write its lock document, so they conflict.
 */
function mongoStore(context: MongoContext, transactions: SerialQueue, rateLimits: MongoRateLimits): Store {
  const store: Store = {
    kind: 'mongodb',
    ...repositoriesOver(repositories, context),
    itemsPerTransaction: ITEMS_PER_TRANSACTION,
    readsBlockThread: false,
    rateLimits,

    async transaction(work, options = {}) {
      const { company } = options
      // Inside a transaction, a nested one is part of it.
      if (context.transaction) {
        if (company) await call(context, (session) => writeLock(context, session, company, COMPANY_LOCK))
        return work(store)
      }
      if (context.state.closed) throw new Error('the MongoDB store is closed')
      try {
        if (company) await ensureLock(context, company, COMPANY_LOCK)
        // Counted once it commits (or fails): what it wrote becomes visible then, not at its writes' count.
        return await counted(
          context,
          transactions.run(() =>
            inTransaction(context.connection.client, async (session) => {
              const transaction = { session, queue: new SerialQueue(), failure: undefined as unknown }
              const inside: MongoContext = { ...context, transaction }
              // First, so that of two overlapping transactions of the company, the later one conflicts at once.
              if (company) await call(inside, (active) => writeLock(inside, active, company, COMPANY_LOCK))
              const result = await work(mongoStore(inside, transactions, rateLimits))
              // A call failed and the work went on: the server may have aborted the transaction already, so it
              // must not look committed. Rejecting with that error aborts it, or runs it again when transient.
              if (transaction.failure !== undefined) throw transaction.failure
              return result
            }),
          ),
        )
      } catch (error) {
        throw toPortError(error)
      }
    },

    committedWrites: () => context.state.writes,

    // A change stream would give one, at the cost of a cursor per instance; nothing is read ahead on MongoDB.
    dataVersion: async () => null,

    async ping() {
      if (context.state.closed) throw new Error('the MongoDB store is closed')
      await context.connection.db.command({ ping: 1 })
    },

    async close() {
      if (context.state.closed) return
      context.state.closed = true
      await context.connection.client.close()
    },
  }
  return store
}
