import type { Document, ObjectId } from 'bson'
import type { ClientSession } from 'mongodb'
import type { Company } from '../model.ts'
import { type CompanyRepository, StoreBusyError, StoreUnconfirmedError } from '../port.ts'
import { lookupId } from './codec.ts'
import { API_KEYS, COMPANIES, COMPANY_COLLECTIONS, COMPANY_DELETIONS } from './collections.ts'
import { inTransaction, toPortErrorOfWrite } from './connection.ts'
import { call, collectionOf, counted, inSession, type MongoContext, read } from './context.ts'
import { COMPANY_LOCK, ensureLock, writeLock } from './locks.ts'
import { findAll, findOne, insertOne } from './operations.ts'

export function mongoCompanies(context: MongoContext): CompanyRepository {
  return {
    insert: (company) => counted(context, insertOne(context, COMPANIES, company)),
    get: (id) => findOne<Company>(context, COMPANIES, { _id: lookupId(id) }),
    setExchangeRates: (id, rates) =>
      counted(
        context,
        call(context, async (session) => {
          const result = await collectionOf(context, COMPANIES).updateOne(
            { _id: lookupId(id) } as Document,
            { $set: { exchange_rates: { ...rates } } },
            inSession(session),
          )
          return result.matchedCount > 0
        }),
      ),
    list: () => findAll<Company>(context, COMPANIES, {}),
    delete: (id, { signal } = {}) => counted(context, deleteCompany(context, id, signal)),
    unfinishedDeletions: () =>
      read(context, async (session) => {
        const marks = await collectionOf(context, COMPANY_DELETIONS)
          .find({}, { ...inSession(session), sort: { _id: 1 } })
          .toArray()
        return marks.map((mark) => String(mark._id))
      }),
    // A MongoDB store has no migrations, so nothing is ever left due.
    recalculationsDue: async () => [],
    takeRecalculationDue: async () => false,
  }
}

/**
 * Deletes every document of the company, in the session's transaction when there is one; outside one, stops between
 * two collections once `signal` is aborted, rejecting with its reason.
 */
async function deleteDocumentsOf(
  context: MongoContext,
  session: ClientSession | undefined,
  companyId: ObjectId | string,
  signal?: AbortSignal,
): Promise<void> {
  for (const codec of COMPANY_COLLECTIONS) {
    signal?.throwIfAborted()
    await collectionOf(context, codec).deleteMany({ company_id: companyId }, inSession(session))
  }
}

/**
 * Deletes a company. Inside a caller's transaction, everything goes in it. Outside one, a large company could
 * not be deleted in one transaction (MongoDB ends one after 60 s): the company and its keys go first, in one
 * small transaction that also marks the deletion (`company_deletions`), so that from then on nothing reaches its
 * data (every request finds its company through them); then its documents, collection by collection, outside any
 * transaction, and the mark last. If that is interrupted (a failover, a crash, `signal`), the mark stays
 * (`unfinishedDeletions`), and deleting the company again (it answers false then), by a client or an import worker,
 * removes what was left.
 *
 * So whatever MongoDB could not serve or confirm outside a transaction is StoreBusyError ("try again"), though the
 * company may be gone already, never StoreUnconfirmedError ("check before sending it again"), on which a client that
 * looks finds the company gone and stops, its documents left behind. Deleting again does nothing twice.
 */
function deleteCompany(context: MongoContext, id: string, signal: AbortSignal | undefined): Promise<boolean> {
  const companyId = lookupId(id)
  const marks = () => collectionOf(context, COMPANY_DELETIONS)
  const deleteCompanyItself = async (session: ClientSession | undefined) => {
    await collectionOf(context, API_KEYS).deleteMany({ company_id: companyId }, inSession(session))
    return (await collectionOf(context, COMPANIES).deleteOne({ _id: companyId } as Document, inSession(session))).deletedCount > 0
  }
  if (context.transaction) {
    return call(context, async (session) => {
      await deleteDocumentsOf(context, session, companyId)
      return deleteCompanyItself(session)
    })
  }
  return call(context, async () => {
    try {
      // The company's lock is written as every transaction naming the company writes it: one that began before this
      // deletion then conflicts with it, rather than commit after it, its documents written once the collections
      // below were swept (left for good, of a company gone).
      await ensureLock(context, id, COMPANY_LOCK)
      const existed = await inTransaction(context.connection.client, async (session) => {
        await writeLock(context, session, id, COMPANY_LOCK)
        // After the lock: two deletions of the company conflict there, so their upserts of the mark never race.
        await marks().replaceOne({ _id: companyId } as Document, {}, { session, upsert: true })
        return deleteCompanyItself(session)
      })
      // Counted now, not only once the sweep is over (`counted`): this store's cached authentications would take the
      // company's keys meanwhile (`Store.committedWrites`).
      context.state.writes++
      await deleteDocumentsOf(context, undefined, companyId, signal)
      await marks().deleteOne({ _id: companyId } as Document)
      return existed
    } catch (error) {
      const mapped = toPortErrorOfWrite(error)
      throw mapped instanceof StoreUnconfirmedError ? new StoreBusyError(mapped.message, { cause: error }) : mapped
    }
  })
}
