/**
 * A worker thread for `test/imports-worker-thread.test.ts`: the real one (`src/worker-thread.ts`), which dies of an
 * uncaught error as an upsert's payload reaches it, before it answers, as a thread would on a fault of ours.
 */
import { parentPort } from 'node:worker_threads'

await import('../../src/worker-thread.ts')
parentPort!.on('message', (message: { type: string }) => {
  if (message.type === 'enqueue') throw new Error('a fault of ours while a payload is stored')
})
