import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { Clock } from '../clock.ts'
import type { ImportStatisticsRepository } from '../store/import-statistics.ts'
import type { DataImport } from '../store/model.ts'

/** What the metrics read at every scrape, and the labels of `commission_api_build_info`. */
export interface MetricsSources {
  /** Import counts and the oldest due import, from the store: every instance reports the same, shared queue. */
  imports: Pick<ImportStatisticsRepository, 'countUnfinished' | 'oldestScheduledDueAt'>
  clock: Clock
  build: { version: string; store: string }
}

let processMetrics: Registry | undefined

/** A store read of a scrape that has not answered in this time is given up, as readiness gives its ping up. */
const STORE_READ_TIMEOUT_MS = 2000

/**
 * What `read` gives, or null when the store fails it or does not answer in STORE_READ_TIMEOUT_MS: a scrape is
 * answered all the same, the store's gauges NaN, so that the request counts and the process's metrics, wanted most
 * while the store is in trouble, still reach the operator (one failed collect would make the whole scrape a 500, and
 * an unreachable MongoDB would hold it past any scrape timeout).
 */
async function fromStore<T>(read: () => Promise<T>): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), STORE_READ_TIMEOUT_MS)
  })
  try {
    return await Promise.race([read(), timeout])
  } catch {
    return null
  } finally {
    clearTimeout(timer)
  }
}

/**
 * prom-client's default metrics (CPU, memory, heap, event loop lag, GC, handles, Node.js version) describe the
 * process, not an app: one registry per process holds them, whatever the number of apps in it (tests build
 * many), and every app's exposition includes it.
 */
function processRegistry(): Registry {
  if (!processMetrics) {
    processMetrics = new Registry()
    collectDefaultMetrics({ register: processMetrics })
  }
  return processMetrics
}

/** What the metrics need of an import worker: its `finished` event. */
export interface FinishingWorker {
  on(event: 'finished', listener: (finished: DataImport) => void): unknown
}

/**
 * The service's Prometheus metrics, in a registry of its own (one per app, so that several apps in one
 * process, as in tests, never mix their counts). Free of HTTP: the import worker reports to it too.
 */
export class ServiceMetrics {
  readonly registry = new Registry()
  readonly requests: Counter<'method' | 'route' | 'status_code'>
  readonly latency: Histogram<'method' | 'route' | 'status_code'>
  readonly rateLimited: Counter
  readonly importQueueFull: Counter
  readonly readQueueFull: Counter
  readonly faultsFired: Counter<'effect'>
  readonly pagesReadAhead: Counter
  readonly importDuration: Histogram<'outcome'>
  readonly importsByState: Gauge<'state'>
  readonly importQueueDepth: Gauge
  readonly oldestImportAge: Gauge
  readonly buildInfo: Gauge<'version' | 'store'>

  constructor({ imports, clock, build }: MetricsSources) {
    const registers = [this.registry]
    this.requests = new Counter({
      name: 'commission_api_http_requests_total',
      help: 'HTTP requests answered, by route template and status code',
      labelNames: ['method', 'route', 'status_code'],
      registers,
    })
    this.latency = new Histogram({
      name: 'commission_api_http_request_duration_seconds',
      help: 'Time from receiving a request to sending its answer, by route template and status code',
      labelNames: ['method', 'route', 'status_code'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    })
    this.rateLimited = new Counter({
      name: 'commission_api_rate_limited_total',
      help: 'Requests refused with 429 by the rate limit',
      registers,
    })
    this.importQueueFull = new Counter({
      name: 'commission_api_import_queue_full_total',
      help: "Upserts refused with 429 because their company's import queue was full",
      registers,
    })
    this.readQueueFull = new Counter({
      name: 'commission_api_read_queue_full_total',
      help: 'Reads refused with 429 because as many reads of their company as may wait for their turn in this instance waited',
      registers,
    })
    this.faultsFired = new Counter({
      name: 'commission_api_faults_fired_total',
      help: 'Requests a fault set through the admin routes fired on, by effect: the status it answered, drop, drop_answer, or delay',
      labelNames: ['effect'],
      registers,
    })
    this.pagesReadAhead = new Counter({
      name: 'commission_api_v2_pages_read_ahead_total',
      help: 'v2 statement and record pages answered from a read-ahead (read while the client read the page before)',
      registers,
    })
    this.importDuration = new Histogram({
      name: 'commission_api_import_duration_seconds',
      help: 'Time from an import starting to it finishing, by outcome (ok or error)',
      labelNames: ['outcome'],
      buckets: [0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900],
      registers,
    })
    const counts = () => fromStore(() => imports.countUnfinished())
    this.importsByState = new Gauge({
      name: 'commission_api_imports',
      help: 'Imports waiting (scheduled) and running (started), read from the store at scrape time; NaN when the store did not answer',
      labelNames: ['state'],
      registers,
      async collect() {
        const byState = (await counts()) ?? { scheduled: Number.NaN, started: Number.NaN }
        this.reset()
        for (const [state, count] of Object.entries(byState)) this.set({ state }, count ?? 0)
      },
    })
    this.importQueueDepth = new Gauge({
      name: 'commission_api_import_queue_depth',
      help: 'Imports waiting to run (scheduled), read from the store at scrape time; NaN when the store did not answer',
      registers,
      async collect() {
        const byState = await counts()
        this.set(byState === null ? Number.NaN : (byState.scheduled ?? 0))
      },
    })
    this.oldestImportAge = new Gauge({
      name: 'commission_api_import_oldest_scheduled_age_seconds',
      help: 'How long the scheduled import that has waited longest has been able to run (since its debounce window closed); 0 when none waits, NaN when the store did not answer',
      registers,
      async collect() {
        const dueAt = await fromStore(async () => ({ at: await imports.oldestScheduledDueAt() }))
        if (dueAt === null) this.set(Number.NaN)
        else this.set(dueAt.at === null ? 0 : Math.max(0, (clock.now().getTime() - Date.parse(dueAt.at)) / 1000))
      },
    })
    this.buildInfo = new Gauge({
      name: 'commission_api_build_info',
      help: 'Always 1: the version of the service and the kind of store it runs on, as labels',
      labelNames: ['version', 'store'],
      registers,
    })
    this.buildInfo.set(build, 1)
  }

  /** One answered request: counted, and timed when its time is known (`seconds`). */
  countAnswer(method: string, route: string, status: number, seconds?: number): void {
    const labels = { method, route, status_code: String(status) }
    this.requests.inc(labels)
    if (seconds !== undefined) this.latency.observe(labels, seconds)
  }

  /** The content type of `exposition()`: the Prometheus text format 0.0.4. */
  get contentType(): string {
    return this.registry.contentType
  }

  /** The text a scrape gets: the service's metrics and the process's. */
  exposition(): Promise<string> {
    return Registry.merge([processRegistry(), this.registry]).metrics()
  }

  /** Times every import the worker finishes, from its launch to its end. */
  watchWorker(worker: FinishingWorker): void {
    worker.on('finished', (finished) => {
      if (!finished.launched_at || !finished.finished_at) return
      const seconds = (Date.parse(finished.finished_at) - Date.parse(finished.launched_at)) / 1000
      this.importDuration.observe({ outcome: finished.error ? 'error' : 'ok' }, Math.max(0, seconds))
    })
  }
}
