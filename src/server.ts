import { mkdirSync } from 'node:fs'
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.ts'
import { type Clock, clockFor } from './clock.ts'
import { type Config, IN_MEMORY } from './config.ts'
import { listeningUrl } from './routes/base-url.ts'
import { type DemoOutcome, ensureDemoCompany } from './fixtures/demo-company.ts'
import { composeImportWorker } from './imports/compose-worker.ts'
import { storeEnqueuingThrough, ThreadedImportWorker } from './imports/threaded-worker.ts'
import type { ImportWorker } from './imports/worker.ts'
import { openStore, storeDescription } from './store/open-store.ts'
import type { Store } from './store/port.ts'

export interface RunningServer {
  app: FastifyInstance
  store: Store
  /** The address it listens on, e.g. http://127.0.0.1:3000. */
  url: string
  /** The import worker of this process: in a thread of its own, or inline (`IMPORT_WORKER`); null with role `api`. */
  worker: ImportWorker | ThreadedImportWorker | null
  /** Stops accepting connections, lets requests in flight finish, then closes the store. */
  close(): Promise<void>
}

export interface ServerOptions {
  /** The HTTP application's clock, and the inline worker's; by default the one `CLOCK` names (a worker thread's too). */
  clock?: Clock
  logStream?: NodeJS.WritableStream
  /** Where the start-up banner (demo key, curl line) is written. */
  out?: NodeJS.WritableStream
  /** `all` (default): HTTP and the import worker; `api`: HTTP only. A worker alone is `startWorkerProcess`. */
  role?: 'all' | 'api'
  /** `serve --test-mode`: the banner also prints the admin token, which is a fixed one then. */
  testMode?: boolean
}

/** Opens the store, creates the demo company on a first start, and serves HTTP. */
export async function startServer(config: Config, options: ServerOptions = {}): Promise<RunningServer> {
  const out = options.out ?? process.stdout
  if (config.dataDir !== IN_MEMORY) mkdirSync(config.dataDir, { recursive: true })
  const store = await openStore(config)
  try {
    const clock = options.clock ?? (await clockFor(config.clock, store.clockOffset))
    const demo = config.demo ? await ensureDemoCompany(store, clock, config.dataDir, config.demoApiKey) : null
    let worker: ImportWorker | ThreadedImportWorker | null = null
    const probe = options.role === 'api' ? undefined : { isRunning: () => worker?.isRunning() ?? false, wake: () => worker?.wake() }
    // With the worker in a thread, that thread stores the upserts' payloads too: the HTTP thread never waits for the disk.
    const threaded = () => (worker instanceof ThreadedImportWorker ? worker : null)
    const appStore = probe && config.importWorker === 'thread' ? storeEnqueuingThrough(store, threaded) : store
    const app = await buildApp({ config, store: appStore, clock, logStream: options.logStream, worker: probe })
    await app.listen({ port: config.port, host: config.host })
    if (probe) {
      worker =
        config.importWorker === 'thread'
          ? new ThreadedImportWorker({ config, logger: app.log })
          : composeImportWorker({ store, clock, config, logger: app.log })
      app.metrics.watchWorker(worker)
      try {
        await worker.start()
      } catch (error) {
        await app.close()
        throw error
      }
    }
    const url = listeningUrl(app, config.host)
    out.write(banner(url, config.publicUrl ?? url, demo, storeDescription(config)))
    if (config.clock === 'controlled') out.write(`Clock: controlled, now ${clock.now().toISOString()}: POST /admin/clock moves it (README, "Using it in your tests")\n`)
    if (options.testMode) out.write(`Test mode: admin token ${config.adminToken} (Authorization: Bearer ${config.adminToken})\n`)
    return {
      app,
      store,
      url,
      worker,
      async close() {
        // Readiness turns 503 and no connection is accepted; the requests in flight finish.
        await app.close()
        // The running import finishes (it is one transaction) before the store closes.
        await worker?.stop()
        await store.close()
      },
    }
  } catch (error) {
    await store.close()
    throw error
  }
}

function banner(url: string, publicUrl: string, demo: DemoOutcome | null, store: string): string {
  const lines = [`commission-api listening on ${url}`, `Store: ${store}`]
  if (demo?.kind === 'created') {
    lines.push(
      '',
      demo.keyFile ? `Demo company created. Its API key (shown once; also written to ${demo.keyFile}):` : 'Demo company created. Its API key:',
      `  ${demo.apiKey}`,
      'Try it:',
      `  curl -H "X-API-Key: ${demo.apiKey}" ${publicUrl}/v2/data-structures`,
    )
  } else if (demo?.keyFile) {
    lines.push(`The demo company exists already; its API key is in ${demo.keyFile}`)
    lines.push(`  curl -H "X-API-Key: $(cat ${demo.keyFile})" ${publicUrl}/v2/data-structures`)
  }
  return `${lines.join('\n')}\n`
}
