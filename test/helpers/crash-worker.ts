/**
 * A worker process for the crash test (`test/worker-crash.test.ts`): it runs the real import worker on the
 * store of DATA_DIR, through a store that pauses the run's transaction once every payload of an import is
 * applied, before the import is marked finished: it prints `paused mid-import <import id> by <owner>` and waits
 * forever, holding the transaction open, for the test to kill it.
 */
import { systemClock } from '../../src/clock.ts'
import { loadConfig } from '../../src/config.ts'
import { composeImportWorker } from '../../src/imports/compose-worker.ts'
import { openStore } from '../../src/store/open-store.ts'
import { pausingBeforeFinish } from './store-wrappers.ts'

const config = loadConfig()
const store = pausingBeforeFinish(await openStore(config), async (importId, owner) => {
  process.stdout.write(`paused mid-import ${importId} by ${owner}\n`)
  // Keep the process alive while the transaction stays open: only SIGKILL ends it.
  setInterval(() => {}, 1 << 30)
  await new Promise<never>(() => {})
})
const worker = composeImportWorker({ store, clock: systemClock, config })
worker.start()
process.stdout.write(`crash worker ${worker.owner} started\n`)
