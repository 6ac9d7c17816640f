import type { Clock } from '../clock.ts'
import type { Config } from '../config.ts'
import type { Store } from '../store/port.ts'
import type { RunHooks } from './run-import.ts'
import { ImportWorker, type WorkerLogger } from './worker.ts'

export interface ImportWorkerParts {
  store: Store
  clock: Clock
  config: Pick<Config, 'importPollMs' | 'importLeaseMs'>
  logger?: WorkerLogger
  /** Test seams of a run; production passes none. */
  hooks?: RunHooks
}

/**
 * The one place that builds an import worker and what it runs, wherever it runs: the worker thread of `serve`
 * (`worker-thread.ts`), the inline worker of `IMPORT_WORKER=inline`, and `serve --role worker`
 * (`worker-process.ts`). Whatever must happen where imports are applied is wired here, once for every role.
 */
export function composeImportWorker({ store, clock, config, logger, hooks }: ImportWorkerParts): ImportWorker {
  return new ImportWorker({ store, clock, logger, pollMs: config.importPollMs, leaseMs: config.importLeaseMs, hooks })
}
