import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ReadQueueFullError } from '../errors.ts'
import { SlotQueues, type SlotTicket } from '../slot-queues.ts'
import { leaveUnanswered } from './test-kit.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The read's turn among its company's reads (`shareReadsFairly`); null on the other requests. */
    readTurn: SlotTicket | null
  }
}

/**
 * Reads of one company handled at once in one process, on a store whose reads hold the thread (SQLite): a second
 * would not run sooner, it would only take the other companies' turn.
 */
export const READS_AT_ONCE_ON_THE_THREAD = 1
/** The same on a store whose reads wait on the network (MongoDB): a few, so that a company's round trips overlap. */
export const READS_AT_ONCE = 4
/** Reads of one company waiting for their turn in one process at most: one more is answered 429 at once. */
export const READS_WAITING_PER_COMPANY = 64

/** The turns of every app of this process (one in a server; tests build several). */
const everyApp = new Set<SlotQueues>()

/** The reads of the company holding a turn (a turn given back counts until it is passed on) and waiting, in this process: for tests. */
export function readsOf(companyId: string): { holding: number; waiting: number } {
  const reads = { holding: 0, waiting: 0 }
  for (const turns of everyApp) {
    const { holding, waiting } = turns.of(companyId)
    reads.holding += holding
    reads.waiting += waiting
  }
  return reads
}

/** Gives the read's turn back (once: a ticket's release is idempotent). */
const giveBack = (request: FastifyRequest) => request.readTurn?.release()

/**
 * Fair reads per company (docs/decisions.md), on the routes of `api` after the rate limit, the key and the test
 * kit's faults: a company's GET and HEAD requests are handled a few at a time (`READS_AT_ONCE…`, from what the
 * store says of its reads), the others waiting in the company's own queue, first come first served, and a turn given
 * back passes on at the event loop's next turn (`SlotQueues`): a company's costly reads delay the company, and each
 * request of the others waits for at most one of them. Writes are not in these turns (an upsert has its own:
 * `admitUpsert`).
 */
export function shareReadsFairly(api: FastifyInstance): void {
  const turns = new SlotQueues(api.store.readsBlockThread ? READS_AT_ONCE_ON_THE_THREAD : READS_AT_ONCE, READS_WAITING_PER_COMPANY)
  everyApp.add(turns)
  api.addHook('onClose', async () => {
    everyApp.delete(turns)
  })
  // On the request, not in a WeakMap keyed by it: a ticket refers to its request (it continues it when its turn
  // comes), and an entry whose value refers to its key outlives every scavenge, to the next full collection
  // (docs/performance.md, "Fair reads per company").
  api.decorateRequest('readTurn', null)

  // After validation: a refused read takes no turn.
  api.addHook('preHandler', (request, reply, done) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return done()
    const ticket = turns.take(request.principal.company.id, () => {
      // Its client left in the pass of the event loop that passed it the turn, and that close is not seen yet.
      if (request.raw.socket?.destroyed) {
        giveBack(request)
        leaveUnanswered(request, reply)
      } else done()
    })
    if (!ticket) {
      done(
        new ReadQueueFullError(
          `Too many of this company's requests are waiting: ${READS_WAITING_PER_COMPANY} of its reads already wait for their turn on this instance`,
          1,
        ),
      )
      return
    }
    request.readTurn = ticket
    if (ticket.state === 'held') return done()
    // A read whose client leaves while it waits never takes its turn, and is not served. (A listener of its own, as
    // Fastify's onRequestAbort would add one to every request.) One that holds its turn then goes on to its answer,
    // which gives the turn back: were it given back at the close, a client that leaves after each request would have
    // any number of reads run at once.
    reply.raw.once('close', () => {
      if (ticket.state !== 'waiting') return
      ticket.release()
      leaveUnanswered(request, reply)
    })
  })

  // As soon as the answer is made, before it is written: the next read's work need not wait for the client.
  api.addHook('onSend', (request, _reply, payload, done) => {
    giveBack(request)
    done(null, payload)
  })
  // An answer whose onSend did not come this far (another hook's failure) gives its turn back once sent.
  api.addHook('onResponse', (request, _reply, done) => {
    giveBack(request)
    done()
  })
}
