import { mkdirSync } from 'node:fs'
import closeWithGrace from 'close-with-grace'
import pino from 'pino'
import { type Clock, clockFor } from '../clock.ts'
import type { Config } from '../config.ts'
import { logDestination, loggerOptions } from '../logger.ts'
import { openStore, storeDescription } from '../store/open-store.ts'
import type { Store } from '../store/port.ts'
import { composeImportWorker } from './compose-worker.ts'
import type { ImportWorker, WorkerLogger } from './worker.ts'

export interface RunningWorker {
  worker: ImportWorker
  store: Store
  /** The worker's clock (the one `CLOCK` names, unless one was given). */
  clock: Clock
  logger: WorkerLogger
  /** Stops the worker (its running import finishes) and closes the store. Idempotent. */
  close(): Promise<void>
}

export interface WorkerProcessOptions {
  clock?: Clock
  /** Where the start-up line is written. */
  out?: NodeJS.WritableStream
}

/** `commission-api serve --role worker`: the import worker alone, on the configured store, without HTTP. */
export async function startWorkerProcess(config: Config, options: WorkerProcessOptions = {}): Promise<RunningWorker> {
  mkdirSync(config.dataDir, { recursive: true })
  const store = await openStore(config)
  const logger = pino(loggerOptions(config.logLevel), logDestination())
  const clock = options.clock ?? (await clockFor(config.clock, store.clockOffset))
  const worker = composeImportWorker({ store, clock, config, logger })
  worker.start()
  ;(options.out ?? process.stdout).write(`commission-api import worker ${worker.owner} started\nStore: ${storeDescription(config)}\n`)
  let closing: Promise<void> | null = null
  return {
    worker,
    store,
    clock,
    logger,
    close() {
      closing ??= worker.stop().then(() => store.close())
      return closing
    },
  }
}

/** SIGTERM or SIGINT: the running import finishes, then the process exits 0 (1 after `timeoutMs`). */
export function closeWorkerOnSignals(running: RunningWorker, timeoutMs: number): void {
  const { logger } = running
  closeWithGrace({ delay: timeoutMs, logger: { error: (message: unknown) => logger.error({ message }, 'shutdown') } }, async ({ signal, err }) => {
    if (err) logger.error({ err }, 'uncaught error: shutting down')
    else logger.info({ signal: signal ?? 'exit' }, 'shutting down')
    await running.close()
  })
}
