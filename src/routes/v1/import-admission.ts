import { hash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { checkImportQueue } from '../../imports/enqueue.ts'
import { drainBeforeAnswer } from '../refused-bodies.ts'
import type { ResendKeys } from '../../store/model.ts'

/**
 * What names an upsert that may come again as it is: nginx sends a PUT (idempotent to HTTP) to another instance
 * when the first died holding it (`deploy/nginx.conf`), with the same X-Request-Id, and the first may have stored
 * it. `id_key` names the request id (with the method and URL), `call_key` the call under it (with its body too):
 * the service remembers the latest call under each id, so that a client that gives one id to two different calls
 * has both stored. None for a request without an id the service kept (it made one), nor for a POST, which nginx
 * never sends again.
 */
export function resendKeys(request: FastifyRequest): ResendKeys | undefined {
  const idKey = requestIdKey(request)
  if (idKey === undefined) return undefined
  return { id_key: idKey, call_key: hash('sha256', `${idKey}\n${JSON.stringify(request.body)}`) }
}

function requestIdKey(request: FastifyRequest): string | undefined {
  if (request.method !== 'PUT' || request.headers['x-request-id'] !== request.id) return undefined
  return hash('sha256', `${request.method} ${request.url}\n${request.id}`)
}

/**
 * Turns per key, first come first served: `take` gives a promise that resolves when the caller's turn comes,
 * and the `release` that ends it (callable at any time, also before the turn came: the turn is then skipped).
 */
class Turns {
  readonly #queues = new Map<string, { tail: Promise<void>; calls: number }>()

  /** How many callers of `key` hold or await a turn. */
  calls(key: string): number {
    return this.#queues.get(key)?.calls ?? 0
  }

  take(key: string): { turn: Promise<void>; release: () => void } {
    let release!: () => void
    const done = new Promise<void>((resolve) => {
      release = resolve
    })
    const queue = this.#queues.get(key) ?? { tail: Promise.resolve(), calls: 0 }
    const turn = queue.tail
    queue.tail = turn.then(() => done)
    queue.calls++
    this.#queues.set(key, queue)
    void done.then(() => {
      if (--queue.calls === 0 && this.#queues.get(key) === queue) this.#queues.delete(key)
    })
    return { turn, release }
  }
}

/**
 * One upsert body of a company at a time in this process: the body of a call is read, parsed and enqueued only
 * when the company's previous call is answered. A company that sends a hundred large calls at once thus keeps
 * one parsed body in memory, not a hundred, and the event loop answers other requests between two of them;
 * the waiting bodies stay unread in their sockets. Other companies are not held up. Per process, because what
 * it protects (the event loop, the heap) is the process's.
 */
const upsertTurns = new Turns()

/** How many calls of the company hold or await its upsert turn in this process: for tests. */
export const upsertCallsOf = (companyId: string): number => upsertTurns.calls(companyId)

/** The size the request declares for its body (`Content-Length`); 0 when it does not (chunked). */
function declaredBytes(request: FastifyRequest): number {
  const length = Number(request.headers['content-length'])
  return Number.isSafeInteger(length) && length > 0 ? length : 0
}

/** The size of the request's body, in bytes: as declared (the framework checked it), or measured. */
export function bodyBytes(request: FastifyRequest): number {
  return declaredBytes(request) || Buffer.byteLength(JSON.stringify(request.body ?? null))
}

/**
 * The `preParsing` hook of the upsert routes: refuses the call with a 429, without reading its body, when the
 * company's import queue is full already; else waits for the company's turn (above) and checks again, as the
 * queue may have filled meanwhile. The enqueue checks the bound once more, atomically, with the body's exact size.
 */
export async function admitUpsert(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const { company } = request.principal
  // The payloads queued may hold this very call, stored under its request id by an instance that died holding it:
  // its body tells (a PUT's is 2 MiB at most), and the enqueue answers it with its import before it checks the bound.
  const storedBefore = await mayHaveBeenStored(request)
  if (!storedBefore) await refuseUnreadWhenQueueFull(request, reply)
  const { turn, release } = upsertTurns.take(company.id)
  // 'close' comes when the answer is sent, or when the client goes away (also while it waits for its turn).
  reply.raw.once('close', release)
  await turn
  if (!storedBefore) {
    // A refused call's body is read and dropped before its answer (drainBeforeAnswer), which holds no memory: the
    // company's next call need not wait for that.
    await refuseUnreadWhenQueueFull(request, reply).catch((error: unknown) => {
      release()
      throw error
    })
  }
}

/** Whether a call was stored under the request's id lately (`ImportRepository.remembersRequest`). */
async function mayHaveBeenStored(request: FastifyRequest): Promise<boolean> {
  const idKey = requestIdKey(request)
  const { store, clock } = request.server
  return idKey !== undefined && store.imports.remembersRequest(request.principal.company.id, idKey, clock.now().toISOString())
}

async function refuseUnreadWhenQueueFull(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  try {
    await checkImportQueue(
      request.server.store,
      request.server.clock,
      request.principal.company.id,
      declaredBytes(request),
      request.server.config.importQueueLimitBytes,
    )
  } catch (error) {
    // Answered before its body is parsed: the rest of it is read and dropped first (for 30 s at most), and the
    // connection closes after the answer, so that a client that stops sending it leaves no connection half-read.
    drainBeforeAnswer(request.raw)
    reply.header('connection', 'close')
    throw error
  }
}
