/**
 * A worker thread for `test/imports-worker-thread.test.ts`: the real one (`src/worker-thread.ts`), which
 * dies of an uncaught error a moment after it started, the first time only (a marker file in DATA_DIR says
 * that it did), as a thread would on a fault of ours.
 */
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { workerData } from 'node:worker_threads'
import type { WorkerThreadData } from '../../src/imports/threaded-worker.ts'

await import('../../src/worker-thread.ts')
const marker = join((workerData as WorkerThreadData).config.dataDir, 'thread-died-once')
if (!existsSync(marker)) {
  writeFileSync(marker, '')
  setTimeout(() => {
    throw new Error('a fault of ours in the worker thread')
  }, 20)
}
