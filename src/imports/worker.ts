import { randomUUID } from 'node:crypto'
import { EventEmitter } from 'node:events'
import { hostname } from 'node:os'
import type { Clock } from '../clock.ts'
import { DEFAULT_IMPORT_LEASE_MS, DEFAULT_IMPORT_POLL_MS } from '../config.ts'
import { type DataImport, resendWindow } from '../store/model.ts'
import { type Store, StoreBusyError, StoreFullError, StoreLockedError, StoreUnconfirmedError, StoreUpgradedError } from '../store/port.ts'
import { failClaimedImport, runClaimedImport } from './run-import.ts'

/** The little of a pino logger the worker uses. */
export interface WorkerLogger {
  info(details: object, message: string): void
  warn(details: object, message: string): void
  error(details: object, message: string): void
}

export interface ImportWorkerOptions {
  store: Store
  clock: Clock
  logger?: WorkerLogger
  /** How long to wait between two looks at the store when there is nothing to run. */
  pollMs?: number
  /** How long a claim holds without renewal; a running import renews it every third of that. */
  leaseMs?: number
  /** Who claims: unique per worker (the default names the host and process). */
  owner?: string
  /** How many days a finished import is kept before a polling worker deletes it (`purgeExpired`); 0: for good. */
  retentionDays?: number
}

export interface ImportWorkerEvents {
  /** An import this worker ran is finished (its outcome committed). */
  finished: [DataImport]
  /** This worker's run was rolled back because another worker took the import over. */
  lost: [DataImport]
  /** The worker stopped during a run: it handed the import back to `scheduled`, for another worker to take at once. */
  handedBack: [DataImport]
  /**
   * The store was busy (StoreBusyError): the run wrote nothing, and the import is handed back to run again; or its
   * disk was full (StoreFullError), or MongoDB out of reach before it confirmed a write of the worker's outside a
   * transaction or the commit of a step (StoreUnconfirmedError): the import is left to its lease, and run again once
   * it expires.
   */
  postponed: [DataImport]
  /** The import's company was deleted (a call stored while it was): the import was deleted, never applied. */
  discarded: [DataImport]
  /** A company's deletion left unfinished (by a crash or a failure midway) is finished: the company's id (`finishDeletions`). */
  deletionFinished: [string]
  /** A round of polling failed (the store was unreachable...); the worker keeps polling. */
  failed: [unknown]
}

/**
 * How many runs of an import may find the store too busy (StoreBusyError) before it is refused as a failure of
 * ours: a MongoDB transaction over its time limit, which fails the same way every time, would otherwise hold every
 * later import of the company back forever. Only those runs count: not the claims of workers that died, nor the
 * runs that found the embedded store's write lock held by another writer (StoreLockedError), which passes.
 */
export const BUSY_ATTEMPTS = 10

/**
 * How many expired imports one batch of `purgeExpired` deletes, and how often a polling worker runs it (and looks for
 * companies' deletions left unfinished).
 */
const PURGE_BATCH = 1000
const PURGE_EVERY_MS = 3_600_000
const PURGE_RETRY_MS = 60_000
const DAY_MS = 86_400_000

/** The worker's hourly upkeep (`#upkeep`), and what it says when one fails. */
type UpkeepTask = 'deletions' | 'purge'
const UPKEEP_FAILURES: Record<UpkeepTask, string> = {
  deletions: 'import worker: finishing the deletions of companies left unfinished failed; tried again in a minute',
  purge: 'import worker: deleting the imports past their retention, or the request ids past their hour, failed; tried again in a minute',
}

/** How many companies a worker remembers serving, for their turns. */
const SERVED_KEPT = 64

const silent: WorkerLogger = { info() {}, warn() {}, error() {} }

/**
 * The background worker that drains imports: it claims the oldest runnable import (one per company at a
 * time, see `ImportRepository.claimNext`), applies it, and looks again; when there is nothing to run it
 * polls every `pollMs`. `start()` and `stop()` are idempotent; `stop()` hands a running import back, or lets
 * it finish when it is in its last transaction.
 */
export class ImportWorker extends EventEmitter<ImportWorkerEvents> {
  readonly owner: string
  readonly #store: Store
  readonly #clock: Clock
  readonly #logger: WorkerLogger
  readonly #pollMs: number
  readonly #leaseMs: number
  /** The companies whose imports this worker claimed lately, the least recent first: they take turns (`claimNext`). */
  readonly #served: string[] = []
  readonly #retentionDays: number
  /** The runs under way (`runOnce`), for `idle`. */
  readonly #runs = new Set<Promise<boolean>>()
  /** When this worker runs each upkeep task next (`#upkeep`, real time, `Date.now()`); absent: at its next poll. */
  readonly #upkeepDue = new Map<UpkeepTask, number>()
  #loop: Promise<void> | null = null
  #stopping = false
  /** Aborted by `stop()`: the running import is handed back at its next step (`runClaimedImport`). */
  #stopped = new AbortController()
  #wake: (() => void) | null = null
  /** A `wake()` came while the worker was not waiting: it looks again before it waits. */
  #woken = false
  /**
   * What the last poll met (said once per spell, until a poll gets through): a kind of store trouble, or another
   * failure by its message; null when none.
   */
  #storeTrouble: string | null = null

  constructor(options: ImportWorkerOptions) {
    super()
    this.#store = options.store
    this.#clock = options.clock
    this.#logger = options.logger ?? silent
    this.#pollMs = options.pollMs ?? DEFAULT_IMPORT_POLL_MS
    this.#leaseMs = options.leaseMs ?? DEFAULT_IMPORT_LEASE_MS
    this.#retentionDays = options.retentionDays ?? 0
    this.owner = options.owner ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
  }

  /** Starts polling in the background. Idempotent. */
  start(): void {
    if (this.#loop) return
    this.#stopping = false
    if (this.#stopped.signal.aborted) this.#stopped = new AbortController()
    this.#loop = this.#poll()
  }

  /**
   * Stops polling and resolves once the running imports, if any, are handed back to `scheduled` (`imports.release`:
   * another worker takes it at once, after the steps this run committed) or, when it was in its last
   * transaction, finished. Idempotent.
   */
  async stop(): Promise<void> {
    this.#stopping = true
    this.#stopped.abort()
    this.#wake?.()
    await this.#loop
    this.#loop = null
    // Runs started by a caller (`runOnce`: a drain), beside the loop's.
    await this.idle()
  }

  /**
   * Looks for runnable imports now rather than at the next poll: something made one runnable (the controlled
   * clock moved, a debounce window was closed). A worker that is running an import looks once it is done.
   */
  wake(): void {
    this.#woken = true
    this.#wake?.()
  }

  /** True while the worker polls (started and not stopped), for health checks. */
  isRunning(): boolean {
    return this.#loop !== null && !this.#stopping
  }

  /** Runs imports until none is runnable now; resolves with how many it ran. */
  async drain(): Promise<number> {
    let ran = 0
    while (!this.#stopping && (await this.runOnce())) ran++
    return ran
  }

  /**
   * Deletes the finished imports older than the retention (`retentionDays`, by the service's clock), of every
   * company, a batch at a time; resolves with how many. Nothing without a retention.
   */
  async purgeExpired(): Promise<number> {
    if (this.#retentionDays === 0) return 0
    await this.#clock.sync?.()
    const before = new Date(this.#clock.now().getTime() - this.#retentionDays * DAY_MS).toISOString()
    return this.#inBatches((limit) => this.#store.imports.purgeFinished(before, limit))
  }

  /**
   * Deletes the request ids remembered past their hour (`resendWindow`, by the service's clock), of every company, a
   * batch at a time; resolves with how many. An enqueue forgets its own company's: these are of companies that sent
   * no call since, which would keep them for good. Retention or not.
   */
  async forgetRequestIds(): Promise<number> {
    await this.#clock.sync?.()
    const { since } = resendWindow(this.#now())
    return this.#inBatches((limit) => this.#store.imports.forgetRequestIds(since, limit))
  }

  /** Runs `deleteBatch` until a batch deletes fewer than PURGE_BATCH, or the worker stops; resolves with the total. */
  async #inBatches(deleteBatch: (limit: number) => Promise<number>): Promise<number> {
    let deleted = 0
    for (;;) {
      const batch = await deleteBatch(PURGE_BATCH)
      deleted += batch
      if (batch < PURGE_BATCH || this.#stopping) return deleted
    }
  }

  /**
   * Finishes the companies' deletions that a crash (or a failure) left unfinished (`companies.unfinishedDeletions`:
   * both stores mark each until its rows are gone), one after the other, stopping between two writes once
   * the worker stops; resolves with the ids of those it finished. A deletion under way in another process is finished with it: each
   * deletes what is left, nothing twice.
   */
  async finishDeletions(): Promise<string[]> {
    const finished: string[] = []
    for (const companyId of await this.#store.companies.unfinishedDeletions()) {
      if (this.#stopping) break
      try {
        await this.#store.companies.delete(companyId, { signal: this.#stopped.signal })
      } catch (error) {
        // Stopped between two writes of a large company's sweep: its mark stays, for the next worker to finish.
        if (this.#stopped.signal.aborted) break
        throw error
      }
      this.#logger.info({ company_id: companyId }, 'company deletion left unfinished is finished')
      this.emit('deletionFinished', companyId)
      finished.push(companyId)
    }
    return finished
  }

  /** Resolves once no run of this worker is under way (`runOnce`), however they end. */
  async idle(): Promise<void> {
    await Promise.allSettled(this.#runs)
  }

  /** Claims and runs one import (of `companyId` only, when given); false when none is runnable now. */
  async runOnce(companyId?: string): Promise<boolean> {
    const run = this.#claimAndRun(companyId)
    this.#runs.add(run)
    try {
      return await run
    } finally {
      this.#runs.delete(run)
    }
  }

  async #claimAndRun(companyId: string | undefined): Promise<boolean> {
    // A controlled clock may have been moved by another process: windows and leases are judged by its latest time.
    await this.#clock.sync?.()
    const claimed = await this.#store.imports.claimNext(this.owner, this.#now(), this.#leaseEnd(), companyId, [...this.#served])
    if (!claimed) return false
    this.#tookTurn(claimed.company_id)
    const log = { import_id: claimed.id, company_id: claimed.company_id, attempt: claimed.attempts }
    this.#logger.info(log, 'import started')
    const renewal = setInterval(() => void this.#renew(claimed), Math.max(1, Math.floor(this.#leaseMs / 3)))
    renewal.unref()
    try {
      const result = await runClaimedImport(this.#store, this.#clock, claimed, this.owner, this.#stopped.signal)
      if (result.kind === 'lost') {
        this.#logger.warn(log, 'import taken over by another worker, or removed by a reset: this run was rolled back')
        this.emit('lost', claimed)
      } else if (result.kind === 'handed back') {
        this.#logger.info(log, 'import handed back: the worker stops, another one takes it over')
        this.emit('handedBack', claimed)
      } else if (result.kind === 'discarded') {
        this.#logger.info(log, 'import deleted unapplied: its company was deleted')
        this.emit('discarded', claimed)
      } else {
        const { cells, statements_written, lines_written, problems } = result.calculation
        const calculation = { cells, statements_written, lines_written, problems: problems.length }
        this.#logger.info({ ...log, error: result.import.error, calculation }, 'import finished')
        // A record or cell the plans could not calculate is not an error of the import: said once, listed on demand.
        if (problems.length > 0)
          this.#logger.warn(
            { ...log, problems: problems.length },
            'plans could not calculate some records: see GET /admin/companies/{id}/calculation-problems',
          )
        this.emit('finished', result.import)
      }
    } catch (error) {
      // Nothing can be written by this version any more, the import's failure neither: a worker of the new version
      // takes the import over once its lease expires.
      if (error instanceof StoreUpgradedError) throw error
      if (error instanceof StoreFullError) {
        // Nothing was written; handed back, it would be claimed and refused again at every poll. Left claimed, it is
        // run again once its lease expires, never refused for it however long the disk stays full: its payloads wait.
        this.#logger.error({ ...log, err: error }, "import postponed: the store's disk is full; it runs again once its lease expires")
        this.emit('postponed', claimed)
        return true
      }
      if (error instanceof StoreUnconfirmedError) {
        // A write of the worker's outside the run's transactions (handing the import back as it stops), or the commit
        // of one of them, may or may not have been applied: not a failure of the import. Left claimed, it runs again
        // once its lease expires, from its last committed step, if the write did not hand it back already: a step
        // records its progress (`imports.advance`, or `finish`) in its own transaction, so a step that did commit is
        // not applied again.
        this.#logger.warn({ ...log, err: error }, 'import postponed: the store was out of reach before it confirmed a write')
        this.emit('postponed', claimed)
        return true
      }
      if (error instanceof StoreLockedError) {
        // Another writer held the embedded store's write lock past the wait: the run passes once that writer is done,
        // however long that takes, so the import is never refused for it (its calls were answered 200). Handed back
        // uncounted, it runs again at the next claim.
        this.#logger.warn({ ...log, err: error }, 'import postponed: another writer held the store; it runs again')
        await this.#handBack(claimed, { postponed: false })
        this.emit('postponed', claimed)
        return true
      }
      if (error instanceof StoreBusyError && (await this.#busyRunsBefore(claimed)) + 1 < BUSY_ATTEMPTS) {
        // Nothing was written, and the same run may succeed later: the import waits, its payloads kept.
        this.#logger.warn({ ...log, err: error }, 'import postponed: the store was busy; it runs again')
        await this.#handBack(claimed, { postponed: true })
        this.emit('postponed', claimed)
        return true
      }
      const reference = randomUUID()
      this.#logger.error({ ...log, err: error, reference }, 'import failed on an internal error')
      if (await failClaimedImport(this.#store, this.#clock, claimed, this.owner, reference)) {
        this.emit('finished', (await this.#store.imports.get(claimed.company_id, claimed.id)) ?? claimed)
      }
    } finally {
      clearInterval(renewal)
    }
    return true
  }

  async #poll(): Promise<void> {
    while (!this.#stopping) {
      this.#woken = false
      try {
        // Between two runs, so that a store never without a runnable import still has its expired imports deleted and
        // its deletions cut short (by a crash or a failure) finished: at the first poll, before any import, then hourly.
        while (!this.#stopping) {
          await this.#upkeep('deletions')
          await this.#upkeep('purge')
          if (!(await this.runOnce())) break
        }
        this.#storeTrouble = null
      } catch (error) {
        // Another process holding the write lock past the wait (a long import or reset), or MongoDB out of reach (a
        // claim it did not confirm is the lease's to settle), is not a failure of ours, and a store a newer version
        // migrated is not either. Each, and any other failure (a corrupt file), is said once per spell, as the polls
        // that meet it follow each other every IMPORT_POLL_MS: a failure said again at each would flood the log.
        const trouble =
          error instanceof StoreUpgradedError
            ? 'upgraded'
            : error instanceof StoreFullError
              ? 'full'
              : error instanceof StoreBusyError || error instanceof StoreUnconfirmedError
                ? 'busy'
                : `failed: ${error instanceof Error ? error.message : String(error)}`
        if (trouble !== this.#storeTrouble) {
          if (trouble === 'busy')
            this.#logger.warn({ err: error }, 'import worker: the store is busy or out of reach; polling on until it answers')
          else if (trouble === 'full')
            this.#logger.error({ err: error }, "import worker: the store's disk is full; polling on until there is room")
          else if (trouble === 'upgraded')
            this.#logger.error(
              { err: error },
              'import worker: a newer version migrated the store; this one claims nothing until it is restarted on it',
            )
          else this.#logger.error({ err: error }, 'import worker: polling failed')
        }
        this.#storeTrouble = trouble
        this.emit('failed', error)
      }
      if (this.#stopping) break
      if (this.#woken) continue
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.#pollMs)
        this.#wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      this.#wake = null
    }
  }

  /**
   * `purgeExpired` and `forgetRequestIds` (`purge`), and `finishDeletions` (`deletions`: a deletion that failed midway,
   * 503, while this worker runs is not left until its next start), each at the worker's first poll, then once an hour
   * of real time; after a failure (a busy store), again a minute later. A failure is said, and the imports go on:
   * nothing reaches what a deletion left.
   */
  async #upkeep(task: UpkeepTask): Promise<void> {
    const due = this.#upkeepDue.get(task)
    if (due !== undefined && Date.now() < due) return
    try {
      if (task === 'deletions') await this.finishDeletions()
      else {
        const deleted = await this.purgeExpired()
        if (deleted > 0)
          this.#logger.info({ deleted, retention_days: this.#retentionDays }, 'finished imports past their retention deleted')
        await this.forgetRequestIds()
      }
      this.#upkeepDue.set(task, Date.now() + PURGE_EVERY_MS)
    } catch (error) {
      this.#upkeepDue.set(task, Date.now() + PURGE_RETRY_MS)
      this.#logger.warn({ err: error }, UPKEEP_FAILURES[task])
    }
  }

  /** The busy runs in a row before this one: as stored now, since a part this run committed cleared them. */
  async #busyRunsBefore(claimed: DataImport): Promise<number> {
    try {
      return (await this.#store.imports.get(claimed.company_id, claimed.id))?.busy_postponements ?? 0
    } catch {
      return claimed.busy_postponements ?? 0
    }
  }

  /** Back to `scheduled` for the next claim; when even that fails, its lease expires and it is claimed again then. */
  async #handBack(claimed: DataImport, options: { postponed: boolean }): Promise<void> {
    try {
      await this.#store.imports.release(claimed.company_id, claimed.id, this.owner, options)
    } catch (error) {
      this.#logger.warn({ err: error, import_id: claimed.id }, 'import hand-back failed: it runs again once its lease expires')
    }
  }

  async #renew(claimed: DataImport): Promise<void> {
    try {
      await this.#clock.sync?.()
      await this.#store.imports.renewLease(claimed.company_id, claimed.id, this.owner, this.#leaseEnd())
    } catch (error) {
      this.#logger.warn({ err: error, import_id: claimed.id }, 'import lease renewal failed')
    }
  }

  #tookTurn(companyId: string): void {
    const index = this.#served.indexOf(companyId)
    if (index !== -1) this.#served.splice(index, 1)
    this.#served.push(companyId)
    // The turns of the companies served longest ago are forgotten: those companies come first again.
    if (this.#served.length > SERVED_KEPT) this.#served.shift()
  }

  #now(): string {
    return this.#clock.now().toISOString()
  }

  #leaseEnd(): string {
    return new Date(this.#clock.now().getTime() + this.#leaseMs).toISOString()
  }
}
