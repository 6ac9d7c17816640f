/**
 * The import worker's thread (started by `ThreadedImportWorker`): it starts as role worker through the
 * composition root (`src/server.ts`: the store the configuration names, the worker `composeImportWorker` builds),
 * without HTTP or banner; it stores the payloads of the upserts the HTTP thread hands it, and reports to the HTTP
 * thread by messages: its log lines (the server's logger writes them), the imports it finishes (for the metrics),
 * the payloads it stored, and that it started. On `stop` it closes as every role does (the worker hands its
 * import back, or finishes it; the store closes) and exits.
 */
import { readlinkSync } from 'node:fs'
import { getPriority, setPriority } from 'node:os'
import { parentPort, workerData } from 'node:worker_threads'
import pino from 'pino'
import {
  type EnqueueCall,
  enqueueFailureOf,
  type EnqueueOutcome,
  type FromWorkerThread,
  type ToWorkerThread,
  type WorkerThreadData,
} from './imports/threaded-worker.ts'
import type { WorkerLogger } from './imports/worker.ts'
import { startServer } from './server.ts'
import type { Store } from './store/port.ts'

if (!parentPort) throw new Error('worker-thread.ts runs as a worker thread (see ThreadedImportWorker)')
const port = parentPort
const send = (message: FromWorkerThread) => port.postMessage(message)

/** Log details as plain data: an Error becomes what pino's serializer makes of it, so that it can be posted. */
function postable(details: object): object {
  return Object.fromEntries(
    Object.entries(details).map(([key, value]) => [key, value instanceof Error ? pino.stdSerializers.err(value) : value]),
  )
}

const logger: WorkerLogger = {
  info: (details, message) => send({ type: 'log', level: 'info', details: postable(details), message }),
  warn: (details, message) => send({ type: 'log', level: 'warn', details: postable(details), message }),
  error: (details, message) => send({ type: 'log', level: 'error', details: postable(details), message }),
}

/**
 * This thread's nice value is the process's plus 10: when the CPU is contended the HTTP thread goes first and the
 * imports wait; on an idle machine it changes nothing. Linux schedules threads one by one (`/proc/thread-self`
 * names this one); elsewhere, or when it is not allowed, the thread keeps the process's priority.
 */
const GIVE_WAY = 10
try {
  const thread = Number(readlinkSync('/proc/thread-self').split('/').at(-1))
  setPriority(thread, Math.min(19, getPriority(thread) + GIVE_WAY))
} catch {
  // Not Linux, or not allowed: the same priority as the HTTP thread.
}

const { config } = workerData as WorkerThreadData
// The worker of role all: the HTTP thread serves the health probes, so the thread listens on no port of its own.
const running = await startServer({ ...config, workerHealthPort: null }, { role: 'worker', logger, out: null })
const worker = running.worker
worker.on('finished', (finished) => send({ type: 'finished', import: finished }))
port.on('message', (message: ToWorkerThread) => {
  if (message.type === 'enqueue') return void enqueue(running.store, message.call, message.enqueue)
  if (message.type === 'wake') return worker.wake()
  void running.close().finally(() => port.close())
})
send({ type: 'started', owner: worker.owner })

/** Stores an upsert's payload for the HTTP thread (`ThreadedImportWorker.enqueue`) and answers how it went. */
async function enqueue(store: Store, call: number, { fresh, payload, now, maxQueuedBytes }: EnqueueCall): Promise<void> {
  let outcome: EnqueueOutcome
  try {
    outcome = { import: await store.imports.enqueue(fresh, payload, now, maxQueuedBytes) }
  } catch (error) {
    outcome = enqueueFailureOf(error)
    if ('failure' in outcome) logger.error({ err: error }, 'storing an upsert payload failed')
  }
  send({ type: 'enqueued', call, outcome })
}
