import { EventEmitter } from 'node:events'
import { Worker } from 'node:worker_threads'
import type { Config } from '../config.ts'
import type { DataImport, ImportPayload } from '../store/model.ts'
import {
  ImportQueueFullError,
  type Store,
  StoreBusyError,
  StoreFullError,
  StoreUnconfirmedError,
  StoreUpgradedError,
} from '../store/port.ts'
import type { WorkerLogger } from './worker.ts'

/** What the HTTP thread gives the import worker's thread. */
export interface WorkerThreadData {
  config: Config
}

/** The arguments of `ImportRepository.enqueue`, as one message. */
export interface EnqueueCall {
  fresh: DataImport
  payload: Omit<ImportPayload, 'import_id'>
  now: string
  maxQueuedBytes?: number
}

/** How an enqueue ended in the worker's thread: the import joined, a full queue, or a failure. */
export type EnqueueOutcome =
  | { import: DataImport }
  | { queuedBytes: number }
  | { busy: string }
  | { full: string }
  | { unconfirmed: string }
  | { upgraded: string }
  | { failure: string }

/**
 * An enqueue's error as the worker's thread tells the HTTP thread (an error does not cross a thread with its class):
 * the port's errors by kind, which the HTTP thread answers each its own way, anything else as a failure.
 */
export function enqueueFailureOf(error: unknown): Exclude<EnqueueOutcome, { import: DataImport }> {
  if (error instanceof ImportQueueFullError) return { queuedBytes: error.queuedBytes }
  if (error instanceof StoreFullError) return { full: error.message }
  if (error instanceof StoreBusyError) return { busy: error.message }
  if (error instanceof StoreUnconfirmedError) return { unconfirmed: error.message }
  if (error instanceof StoreUpgradedError) return { upgraded: error.message }
  return { failure: error instanceof Error ? error.message : String(error) }
}

/** The error an enqueue's failure stands for, on the HTTP thread. */
export function enqueueErrorOf(outcome: Exclude<EnqueueOutcome, { import: DataImport }>): Error {
  if ('queuedBytes' in outcome) return new ImportQueueFullError(outcome.queuedBytes)
  if ('full' in outcome) return new StoreFullError(outcome.full)
  if ('busy' in outcome) return new StoreBusyError(outcome.busy)
  if ('unconfirmed' in outcome) return new StoreUnconfirmedError(outcome.unconfirmed)
  if ('upgraded' in outcome) return new StoreUpgradedError(outcome.upgraded)
  return new Error(`the import worker thread could not store the payload: ${outcome.failure}`)
}

/** Messages from the HTTP thread to the worker's thread. */
export type ToWorkerThread = { type: 'stop' } | { type: 'wake' } | { type: 'enqueue'; call: number; enqueue: EnqueueCall }

/** Messages from the worker's thread to the HTTP thread. */
export type FromWorkerThread =
  | { type: 'started'; owner: string }
  | { type: 'log'; level: keyof WorkerLogger; details: object; message: string }
  | { type: 'finished'; import: DataImport }
  | { type: 'enqueued'; call: number; outcome: EnqueueOutcome }

export interface ThreadedImportWorkerOptions {
  config: Config
  /** Writes the thread's log lines (the server's logger, so that every line goes through one destination). */
  logger: WorkerLogger
  /** The module the thread runs: `worker-thread.ts` unless a test gives its own. */
  entry?: URL
  /** How long to wait before starting a thread that died again. */
  restartDelayMs?: number
}

const WORKER_THREAD = new URL('../worker-thread.ts', import.meta.url)

/**
 * The import worker of `serve`, run in a worker thread of its own (the default, `IMPORT_WORKER=thread`): the
 * thread starts as role worker (`src/server.ts`: the store the configuration names, the worker
 * `composeImportWorker` builds), so that reading, parsing and writing an import never stops the event loop that
 * answers HTTP. It has the inline worker's surface (`start`, `stop`, `isRunning`, the `finished` event). A thread
 * that dies unexpectedly is started again after `restartDelayMs`; its import is taken over once its lease
 * expires, as after a crash.
 */
export class ThreadedImportWorker extends EventEmitter<{ finished: [DataImport] }> {
  readonly #config: Config
  readonly #logger: WorkerLogger
  readonly #entry: URL
  readonly #restartDelayMs: number
  #thread: Worker | null = null
  #exited: Promise<unknown> = Promise.resolve()
  #running = false
  #stopping = false
  #restart: NodeJS.Timeout | null = null
  /** Enqueues sent to the thread and not answered yet, by call number. */
  readonly #enqueues = new Map<number, { resolve: (joined: DataImport) => void; reject: (error: Error) => void }>()
  #calls = 0

  constructor(options: ThreadedImportWorkerOptions) {
    super()
    this.#config = options.config
    this.#logger = options.logger
    this.#entry = options.entry ?? WORKER_THREAD
    this.#restartDelayMs = options.restartDelayMs ?? 1000
  }

  /** Starts the thread and resolves once its worker polls; rejects when the thread fails to start. */
  async start(): Promise<void> {
    if (this.#thread) return
    this.#stopping = false
    try {
      await this.#spawn()
    } catch (error) {
      // A thread that cannot start the first time will not start later: the caller decides.
      this.#stopping = true
      throw error
    }
  }

  /**
   * Asks the thread to stop (its worker hands its running import back, or finishes it when it is in its last
   * transaction) and resolves once it has exited. Idempotent.
   */
  async stop(): Promise<void> {
    this.#stopping = true
    if (this.#restart) clearTimeout(this.#restart)
    this.#restart = null
    this.#send({ type: 'stop' })
    await this.#exited
  }

  /** Has the thread's worker look for runnable imports now rather than at its next poll (`ImportWorker.wake`). */
  wake(): void {
    this.#send({ type: 'wake' })
  }

  /** True while the thread's worker polls (started and not stopping), for health checks. */
  isRunning(): boolean {
    return this.#running && !this.#stopping
  }

  /**
   * `store.imports.enqueue`, done by the thread on its own connection: the HTTP thread only posts the payload
   * (cheaper than serializing it) and never waits inside a write for the disk. Rejects with ImportQueueFullError
   * as the store does, and with StoreUnconfirmedError when the thread stops before it answered (the payload may
   * then be stored or not, as after a crash: it was not acknowledged).
   */
  enqueue(...[fresh, payload, now, maxQueuedBytes]: Parameters<Store['imports']['enqueue']>): Promise<DataImport> {
    if (!this.#thread) return Promise.reject(new Error('the import worker thread is not running'))
    const call = ++this.#calls
    return new Promise<DataImport>((resolve, reject) => {
      this.#enqueues.set(call, { resolve, reject })
      this.#send({ type: 'enqueue', call, enqueue: { fresh, payload, now, maxQueuedBytes } })
    })
  }

  /** The id of the thread the worker runs in (never 0, the main thread's), or null when there is none. */
  get threadId(): number | null {
    return this.#thread?.threadId ?? null
  }

  #spawn(): Promise<void> {
    const thread = new Worker(this.#entry, { name: 'import-worker', workerData: { config: this.#config } satisfies WorkerThreadData })
    this.#thread = thread
    // Not events.once: it would reject on the thread's 'error', which the listener below reports.
    this.#exited = new Promise((resolve) => thread.once('exit', resolve))
    return new Promise<void>((resolve, reject) => {
      thread.on('message', (message: FromWorkerThread) => {
        if (message.type === 'log') this.#logger[message.level](message.details, message.message)
        else if (message.type === 'finished') this.emit('finished', message.import)
        else if (message.type === 'enqueued') this.#answer(message.call, message.outcome)
        else {
          this.#running = true
          resolve()
        }
      })
      thread.on('error', (error) => {
        this.#logger.error({ err: error }, 'import worker thread failed')
        reject(error)
      })
      thread.on('exit', (code) => {
        this.#running = false
        this.#thread = null
        // The thread may have committed the payload before it died, or not: the call is answered as a write the store
        // did not confirm (503, "look before sending it again"), not as a 500 that says nothing of it.
        for (const [call, pending] of this.#enqueues) {
          this.#enqueues.delete(call)
          pending.reject(new StoreUnconfirmedError('the import worker thread stopped before it answered whether it stored the payload'))
        }
        reject(new Error(`the import worker thread exited (code ${code}) before it started`))
        if (this.#stopping) return
        this.#logger.error({ exit_code: code }, 'import worker thread stopped unexpectedly: starting it again')
        this.#restart = setTimeout(() => {
          this.#restart = null
          if (!this.#stopping) this.#spawn().catch(() => undefined)
        }, this.#restartDelayMs)
      })
    })
  }

  #send(message: ToWorkerThread): void {
    this.#thread?.postMessage(message)
  }

  #answer(call: number, outcome: EnqueueOutcome): void {
    const pending = this.#enqueues.get(call)
    if (!pending) return
    this.#enqueues.delete(call)
    if ('import' in outcome) pending.resolve(outcome.import)
    else pending.reject(enqueueErrorOf(outcome))
  }
}

/**
 * The store the HTTP thread of `serve` uses when the import worker runs in a thread: the same store, except that
 * an upsert's payload is stored by the worker's thread (`ThreadedImportWorker.enqueue`) while that thread runs,
 * and by this store otherwise (starting, restarting).
 */
export function storeEnqueuingThrough(store: Store, worker: () => ThreadedImportWorker | null): Store {
  return {
    ...store,
    imports: {
      ...store.imports,
      enqueue(...args) {
        const thread = worker()
        return thread?.isRunning() ? thread.enqueue(...args) : store.imports.enqueue(...args)
      },
    },
  }
}
