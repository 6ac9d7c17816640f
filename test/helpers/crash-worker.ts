/**
 * A worker process for the crash test (`test/worker-crash.test.ts`): it runs the real import worker on the
 * store of DATA_DIR, with one test hook: once every payload of an import is applied, inside the transaction
 * and before the import is marked finished, it prints `paused mid-import <import id> by <owner>` and waits
 * forever, holding the transaction open, for the test to kill it.
 */
import { systemClock } from '../../src/clock.ts'
import { loadConfig } from '../../src/config.ts'
import { composeImportWorker } from '../../src/imports/compose-worker.ts'
import { openStore } from '../../src/store/open-store.ts'

const config = loadConfig()
const store = await openStore(config)
const worker = composeImportWorker({
  store,
  clock: systemClock,
  config,
  hooks: {
    async beforeFinish(claimed) {
      process.stdout.write(`paused mid-import ${claimed.id} by ${claimed.lease_owner}\n`)
      // Keep the process alive while the transaction stays open: only SIGKILL ends it.
      setInterval(() => {}, 1 << 30)
      await new Promise<never>(() => {})
    },
  },
})
worker.start()
process.stdout.write(`crash worker ${worker.owner} started\n`)
