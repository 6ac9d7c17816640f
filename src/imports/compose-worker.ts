import type { Clock } from '../clock.ts'
import type { Config } from '../config.ts'
import type { Store } from '../store/port.ts'
import { ImportWorker, type WorkerLogger } from './worker.ts'

export interface ImportWorkerParts {
  store: Store
  clock: Clock
  config: Pick<Config, 'importPollMs' | 'importLeaseMs' | 'importRetentionDays'>
  logger?: WorkerLogger
}

/**
 * The one place that builds an import worker and what it runs, wherever it runs: every role of `serve`, through
 * the composition root (`src/server.ts`: the inline worker of `IMPORT_WORKER=inline`, `serve --role worker`, and
 * the worker thread, which starts as that role), and the drains of the admin routes and the CLI. Whatever must
 * happen where imports are applied is wired here, once for all of them.
 */
export function composeImportWorker({ store, clock, config, logger }: ImportWorkerParts): ImportWorker {
  return new ImportWorker({
    store,
    clock,
    logger,
    pollMs: config.importPollMs,
    leaseMs: config.importLeaseMs,
    retentionDays: config.importRetentionDays,
  })
}
