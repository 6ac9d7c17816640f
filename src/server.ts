import { makeDirectories, PRIVATE_DIRECTORY_MODE } from './durable-files.ts'
import { flushCompileCache } from 'node:module'
import { BlockList, isIP } from 'node:net'
import { isMainThread } from 'node:worker_threads'
import type { FastifyInstance } from 'fastify'
import pino from 'pino'
import { type Clock, clockFor } from './clock.ts'
import { type Config, IN_MEMORY, TEST_MODE_DEFAULTS } from './config.ts'
import type { DemoOutcome } from './fixtures/demo-company.ts'
import { composeImportWorker } from './imports/compose-worker.ts'
import { storeEnqueuingThrough, ThreadedImportWorker } from './imports/threaded-worker.ts'
import type { ImportWorker, WorkerLogger } from './imports/worker.ts'
import { listeningUrl } from './routes/base-url.ts'
import { drain } from './routes/draining.ts'
import { closeGracefullyOnSignals } from './shutdown.ts'
import { openStore, storeDescription } from './store/open-store.ts'
import { type Store, StoreBusyError } from './store/port.ts'

/** What `serve` runs: HTTP and the import worker (`all`), HTTP alone (`api`), the import worker alone (`worker`). */
export type Role = 'all' | 'api' | 'worker'

/** What every role runs, and how it stops. */
export interface Running {
  role: Role
  store: Store
  clock: Clock
  /** The HTTP listener: the API (roles all and api), or the worker's health port (role worker with WORKER_HEALTH_PORT). */
  app: FastifyInstance | null
  /** The address it listens on, e.g. http://127.0.0.1:3000; null without a listener. */
  url: string | null
  /** The import worker of this process: in a thread of its own, or inline (`IMPORT_WORKER`), or alone; null with role api. */
  worker: ImportWorker | ThreadedImportWorker | null
  /** Where the process logs: the API's logger, or the worker's. */
  log: WorkerLogger
  /**
   * Stops what was started, in the reverse order: the listener (readiness turns 503, no connection is accepted,
   * the requests in flight finish), then the worker (it hands its import back, or finishes it when it is in its
   * last transaction), then the store. Idempotent.
   */
  close(): Promise<void>
  /**
   * The step before `close()` when SHUTDOWN_DRAIN_MS is set (`shutdown.ts`): the API's listener closes, the open
   * connections are answered and closed one by one, for at most `ms` (`routes/draining.ts`); resolves with how many
   * were still open. Nothing with role worker.
   */
  drain(ms: number): Promise<{ open: number }>
}

/** Roles all and api: the API listens. */
export interface RunningServer extends Running {
  role: 'all' | 'api'
  app: FastifyInstance
  url: string
}

/** Role worker: the import worker, and its health listener when WORKER_HEALTH_PORT is set. */
export interface RunningWorker extends Running {
  role: 'worker'
  worker: ImportWorker
}

export interface ServerOptions {
  /** `all` by default. */
  role?: Role
  /** The clock of the HTTP application and of the inline worker; by default the one `CLOCK` names (a worker thread's too). */
  clock?: Clock
  /** A pino destination for the logs (tests capture them); stdout when absent. */
  logStream?: NodeJS.WritableStream
  /** The worker's logger with role worker, instead of one on `logStream` (the worker thread posts its lines). */
  logger?: WorkerLogger
  /** Where the start-up banner (demo key, curl line) is written: stdout by default, nowhere when null. */
  out?: NodeJS.WritableStream | null
  /** `serve --test-mode`: the banner also prints the admin token, which is a fixed one then. */
  testMode?: boolean
  /**
   * `serve`: SIGTERM, SIGINT or an uncaught error close the process gracefully (`shutdown.ts`), from the moment the
   * API's listener accepts requests (role worker: from the moment its worker starts).
   */
  closeOnSignals?: boolean
}

/** What a role started, closed in the reverse order. */
interface Started {
  app: FastifyInstance | null
  worker: ImportWorker | ThreadedImportWorker | null
}

/**
 * The composition root: every role of `serve`, and the import worker's thread (which starts as role worker),
 * starts here in tiers (the store, the clock, the demo company, the import worker and HTTP) and stops through one
 * `close()`. The HTTP tier is loaded only by the roles that serve HTTP: the worker thread of role all loads none of
 * it, as it loads no MongoDB driver on the embedded store (`open-store.ts`), each costing every thread its memory.
 */
export async function startServer(config: Config, options: ServerOptions & { role: 'worker' }): Promise<RunningWorker>
export async function startServer(config: Config, options?: ServerOptions & { role?: 'all' | 'api' }): Promise<RunningServer>
export async function startServer(config: Config, options?: ServerOptions): Promise<RunningServer | RunningWorker>
export async function startServer(config: Config, options: ServerOptions = {}): Promise<Running> {
  const role = options.role ?? 'all'
  if (config.dataDir !== IN_MEMORY) makeDirectories(config.dataDir, PRIVATE_DIRECTORY_MODE)
  const store = await openStore(config)
  const started: Started = { app: null, worker: null }
  let closing: Promise<void> | null = null
  const close = () => (closing ??= closeInOrder(started, store))
  const drainApi = async (ms: number) => (role === 'worker' || started.app === null ? { open: 0 } : drain(started.app, ms))
  // Called by the role as soon as a request may be in flight, not once the role has started: the API listens before
  // the import worker's thread has started (a few hundred milliseconds; after an upgrade, as long as the recalculations
  // it runs first, a minute for a large company), and a signal not handled kills the process, its requests cut.
  const signals = { uninstall: () => {} }
  // A stop drains first (SHUTDOWN_DRAIN_MS) and closes after: the start going on meanwhile sees it from its drain on.
  let draining = false
  const drainFirst = async (ms: number) => {
    draining = true
    return drainApi(ms)
  }
  const stopBegun = () => draining || closing !== null
  const handleSignals = (log: WorkerLogger) => {
    if (options.closeOnSignals) signals.uninstall = closeGracefullyOnSignals({ log, close, drain: drainFirst }, config)
  }
  try {
    const clock = options.clock ?? (await clockFor(config.clock, store.clockOffset))
    const { log, banner } =
      role === 'worker'
        ? await startWorker(config, options, store, clock, started, handleSignals)
        : await startApi(config, options, role, store, clock, started, handleSignals)
    const running: Running = {
      role,
      store,
      clock,
      app: started.app,
      url: started.app && listeningUrl(started.app, config.host),
      worker: started.worker,
      log,
      close,
      drain: drainApi,
    }
    // Stopped while it started (drained, or closed): what is left to start would only fail on the closed store, or
    // print a banner for a listener already closed; the next start does it.
    if (stopBegun()) return running
    await recalculateWhatIsDue(store, clock, log)
    if (stopBegun()) return running
    if (isMainThread && !options.clock) await warnOfMovedClock(config, store, log)
    // Once a process: with role all, the import worker's thread (which starts the role worker) leaves it to the HTTP one.
    if (isMainThread) await renderWhatIsStale(store, log, stopBegun)
    if (stopBegun()) return running
    // Every module of the role is loaded. Node writes its compile cache (on with `npm start`: scripts/compile-cache.mjs)
    // at exit; written now too, a process that is killed rather than stopped still leaves it for the next start.
    flushCompileCache()
    if (options.out !== null) (options.out ?? process.stdout).write(banner(running.url))
    return running
  } catch (error) {
    // A start that failed is reported by its caller, with its exit code, not ended as a graceful stop with 0.
    signals.uninstall()
    await close()
    throw error
  }
}

/**
 * The full recalculations a migration left due, run once the role has started: a process started on a store an
 * earlier version left wrong puts it right (the HTTP role answers meanwhile; the worker's thread of role all runs
 * them before it reports itself started, so that readiness waits for them there). One that fails stays due for the
 * next start.
 */
async function recalculateWhatIsDue(store: Store, clock: Clock, log: WorkerLogger): Promise<void> {
  try {
    if ((await store.companies.recalculationsDue()).length === 0) return
    const { recalculateDueCompanies } = await import('./admin/plans.ts')
    for (const outcome of await recalculateDueCompanies(store, clock)) {
      const { company_id, reason } = outcome
      if ('failure' in outcome) {
        log.error(
          { company_id, reason, err: outcome.failure },
          'a recalculation due after the upgrade failed; the next start runs it again',
        )
        continue
      }
      const { cells, statements_written, lines_written, lines_deleted } = outcome.calculation
      log.info(
        { company_id, reason, calculation: { cells, statements_written, lines_written, lines_deleted } },
        'company recalculated after the upgrade',
      )
    }
  } catch (error) {
    log.error({ err: error }, 'the recalculations due after the upgrade could not be listed; the next start runs them')
  }
}

/**
 * The instances of one store agree on the time only when they run the same `CLOCK`: a process on the system's
 * clock beside processes on the controlled one disagrees with them on every window (the shared rate limit's,
 * leases, debounce windows). Nothing tells a process which clock the others run; a controlled clock the store says
 * was moved is said at start.
 */
async function warnOfMovedClock(config: Config, store: Store, log: WorkerLogger): Promise<void> {
  const offsetMs = await movedClockOffset(config, store)
  if (offsetMs > 0) log.warn({ clock_offset_ms: offsetMs }, MOVED_CLOCK_WARNING)
}

export const MOVED_CLOCK_WARNING =
  "this process runs CLOCK=system, and the store's controlled clock was moved: instances of one store that run different clocks disagree on the rate limit's windows, leases and debounce windows (set the same CLOCK on every one)"

/**
 * How far the store's controlled clock was moved, when this process runs CLOCK=system (else 0). Only for a warning:
 * a store that cannot tell now (busy, or closed by a stop during the start) answers 0.
 */
export async function movedClockOffset(config: Config, store: Store): Promise<number> {
  if (config.clock !== 'system') return 0
  return store.clockOffset.read().catch(() => 0)
}

/**
 * Statement rows rendered by an earlier version (another rendering code, or a key that named less of a metric) match
 * no structure's key any more, and every page would render them as it reads them until something rendered them
 * again: the first start of a version renders them, as a fixture load does. Where nothing is stale, it reads each
 * company's statements once and writes nothing (`renderStatements`). What cannot be rendered now (the store busy
 * with a long write) is logged and left to the next start; its pages render their rows as they read them.
 */
async function renderWhatIsStale(store: Store, log: WorkerLogger, stopBegun: () => boolean): Promise<void> {
  const { renderStatements } = await import('./v2/statement-texts.ts')
  let companies: { id: string }[]
  try {
    companies = await store.companies.list()
  } catch (error) {
    log.warn({ err: error }, 'statement rows could not be rendered again at start: pages render them as they are read')
    return
  }
  for (const [index, company] of companies.entries()) {
    // A stop began (a drain, then the close): the companies left are rendered at the next start, as after a busy store.
    if (stopBegun()) return
    try {
      const rendered = await renderStatements(store, company.id)
      if (rendered > 0) log.info({ company_id: company.id, statements: rendered }, 'statement rows rendered ahead of reads again')
    } catch (error) {
      // SQLite's one write lock, held by another writer past the wait, would keep each next company waiting as long
      // (MongoDB locks a company at a time: the others go on).
      const stop = error instanceof StoreBusyError && store.kind === 'sqlite'
      const left = stop ? companies.slice(index).map((item) => item.id) : [company.id]
      log.warn({ err: error, company_ids: left }, 'statement rows could not be rendered again at start: pages render them as they are read')
      if (stop) return
    }
  }
}

async function closeInOrder(started: Started, store: Store): Promise<void> {
  await started.app?.close()
  await started.worker?.stop()
  await store.close()
}

/** What a role's start gives the root: its logger, and its banner once the listener's address is known. */
interface RoleStart {
  log: WorkerLogger
  banner(url: string | null): string
}

/** Roles all and api: the demo company, the HTTP application, and with role all the import worker (a thread by default). */
async function startApi(
  config: Config,
  options: ServerOptions,
  role: Role,
  store: Store,
  clock: Clock,
  started: Started,
  handleSignals: (log: WorkerLogger) => void,
): Promise<RoleStart> {
  const [{ buildApp }, { ensureDemoCompany }] = await Promise.all([import('./app.ts'), import('./fixtures/demo-company.ts')])
  const demo = config.demo ? await ensureDemoCompany(store, clock, config.dataDir, config.demoApiKey) : null
  const probe = role === 'api' ? undefined : { isRunning: () => started.worker?.isRunning() ?? false, wake: () => started.worker?.wake() }
  // With the worker in a thread, that thread stores the upserts' payloads too: the HTTP thread never waits for the disk.
  const threaded = () => (started.worker instanceof ThreadedImportWorker ? started.worker : null)
  const appStore = probe && config.importWorker === 'thread' ? storeEnqueuingThrough(store, threaded) : store
  const app = await buildApp({ config, store: appStore, clock, logStream: options.logStream, worker: probe })
  started.app = app
  await app.listen({ port: config.port, host: config.host })
  handleSignals(app.log)
  if (probe) {
    const worker =
      config.importWorker === 'thread'
        ? new ThreadedImportWorker({ config, logger: app.log })
        : composeImportWorker({ store, clock, config, logger: app.log })
    started.worker = worker
    app.metrics.watchWorker(worker)
    await worker.start()
  }
  return {
    log: app.log,
    banner: (url) => {
      const listening = url ?? ''
      let text = apiBanner(listening, config.publicUrl ?? listening, demo, storeDescription(config), config.demoApiKey)
      if (config.clock === 'controlled')
        text += `Clock: controlled, now ${clock.now().toISOString()}: POST /admin/clock moves it (docs/testing.md)\n`
      if (options.testMode) text += `Test mode: admin token ${config.adminToken} (Authorization: Bearer ${config.adminToken})\n`
      if (options.testMode && !isLoopback(config.host))
        text +=
          `Warning: HOST=${config.host} serves this well-known admin token beyond this machine: whoever reaches the port ` +
          'can load, reset and read every company. Keep HOST at 127.0.0.1, or set ADMIN_TOKEN to a secret of your own.\n'
      return text
    },
  }
}

/** Role worker: the import worker alone, and with WORKER_HEALTH_PORT its probes and metrics on a listener of their own. */
async function startWorker(
  config: Config,
  options: ServerOptions,
  store: Store,
  clock: Clock,
  started: Started,
  handleSignals: (log: WorkerLogger) => void,
): Promise<RoleStart> {
  const log = options.logger ?? (await workerLogger(config, options.logStream))
  const worker = composeImportWorker({ store, clock, config, logger: log })
  started.worker = worker
  handleSignals(log)
  worker.start()
  if (config.workerHealthPort !== null) {
    const { buildWorkerHealth } = await import('./routes/worker-health.ts')
    const app = buildWorkerHealth({ config, store, clock, worker })
    started.app = app
    // Its failure names WORKER_HEALTH_PORT, this role's one listener, even where PORT holds the same number.
    await app.listen({ port: config.workerHealthPort, host: config.host }).catch((error: unknown) => {
      throw Object.assign(error as Error, { setting: 'WORKER_HEALTH_PORT' })
    })
  }
  return {
    log,
    banner: (url) =>
      `commission-api import worker ${worker.owner} started\nStore: ${storeDescription(config)}\n` +
      (url ? `commission-api import worker health and metrics on ${url}\n` : ''),
  }
}

/** The worker role's own logger: a pino one, as the API's is, on `logStream` or stdout. */
async function workerLogger(config: Config, logStream: NodeJS.WritableStream | undefined): Promise<WorkerLogger> {
  const { logDestination, loggerOptions } = await import('./logger.ts')
  return pino(loggerOptions(config.logLevel), logStream ?? logDestination())
}

function apiBanner(url: string, publicUrl: string, demo: DemoOutcome | null, store: string, demoApiKey: string | null): string {
  const lines = [`commission-api listening on ${url}`, `Store: ${store}`]
  if (demo?.kind === 'created') {
    // A secret the operator chose is theirs: printed, it would be in every log that keeps the service's output. A
    // generated one has no other way to the operator here, and the test mode's is printed in the docs.
    const shown = demoApiKey === null || demoApiKey === TEST_MODE_DEFAULTS.DEMO_API_KEY ? demo.apiKey : null
    const where = demo.keyFile ? `also written to ${demo.keyFile}` : null
    if (shown) lines.push('', `Demo company created. Its API key${where ? ` (shown once; ${where})` : ''}:`, `  ${shown}`)
    else lines.push('', `Demo company created. Its API key is the value of DEMO_API_KEY (not shown${where ? `; ${where}` : ''}).`)
    const keyText = shown ?? (demo.keyFile ? `$(cat ${demo.keyFile})` : '$DEMO_API_KEY')
    lines.push('Try it:', `  curl -H "X-API-Key: ${keyText}" ${publicUrl}/v2/data-structures`)
  } else if (demo?.keyFile) {
    lines.push(`The demo company exists already; its API key is in ${demo.keyFile}`)
    lines.push(`  curl -H "X-API-Key: $(cat ${demo.keyFile})" ${publicUrl}/v2/data-structures`)
  } else if (demo?.kind === 'existing' && demo.staleKeyFile) {
    lines.push(
      `The key in ${demo.staleKeyFile} is no longer valid (revoked, or its company deleted): keys create makes another (docs/cli.md)`,
    )
  }
  return `${lines.join('\n')}\n`
}

/** Whether a listening address is reached from this machine only. */
function isLoopback(host: string): boolean {
  const address = host.replace(/^\[(.*)\]$/, '$1')
  if (address === 'localhost') return true
  const family = isIP(address)
  return family !== 0 && LOOPBACK.check(address, family === 4 ? 'ipv4' : 'ipv6')
}

const LOOPBACK = new BlockList()
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4')
LOOPBACK.addAddress('::1', 'ipv6')
