import { expect } from 'vitest'
import { ImportWorker } from '../src/imports/worker.ts'
import type { Store } from '../src/store/port.ts'
import type { User } from '../src/store/model.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { type CallOptions, type Reply, startTestServer, type TestServer } from './helpers/server.ts'

/** A test server with the small fixture's company loaded and an import worker on the same store and clock. */
export interface ImportHarness {
  server: TestServer
  store: Store
  worker: ImportWorker
  companyId: string
  key: string
  /** An authenticated call as the company's owner. */
  call(path: string, options?: CallOptions): Promise<Reply>
  /** The `data_import` of GET /v1/imports/{id}, asserting a 200. */
  importOf(id: string): Promise<any>
  /** Runs every runnable import now; returns how many ran. */
  drain(): Promise<number>
  /** The company's user with this email (case-insensitive), from the store. */
  user(email: string): Promise<User | undefined>
  close(): Promise<void>
}

export async function startImportHarness(name = 'Acme', env: Record<string, string> = {}): Promise<ImportHarness> {
  // Many calls at one instant of the manual clock: lift the per-second rate limit out of the way.
  const server = await startTestServer({ RATE_LIMIT_PER_SECOND: '1000000', ...env })
  const { companyId, apiKey } = await server.load(smallFixture(name))
  const worker = new ImportWorker({ store: server.store, clock: server.clock, owner: 'test-worker' })
  const call = (path: string, options: CallOptions = {}) => server.call(path, { key: apiKey, ...options })
  return {
    server,
    store: server.store,
    worker,
    companyId,
    key: apiKey,
    call,
    async importOf(id) {
      const reply = await call(`/v1/imports/${id}`)
      expect(reply.status).toBe(200)
      return reply.body.data_import
    },
    drain: () => worker.drain(),
    async user(email) {
      return (await server.store.users.findByEmails(companyId, [email])).get(email.toLowerCase())
    },
    async close() {
      await worker.stop()
      await server.close()
    },
  }
}
