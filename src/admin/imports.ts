import { setTimeout as sleep } from 'node:timers/promises'
import { type Static, Type } from 'typebox'
import type { Clock } from '../clock.ts'
import { TimedOutError } from '../errors.ts'
import { importView, ImportViewSchema } from '../imports/import-view.ts'
import type { ImportWorker } from '../imports/worker.ts'
import { type DataImport, IMPORT_TARGETS, type ImportStatus } from '../store/model.ts'
import type { Store } from '../store/port.ts'
import { existingCompany } from './company-admin.ts'

/**
 * The imports of a company for tests (the admin routes and the CLI): list them with their details, and drain
 * them, so that a test can wait until everything it sent is applied. Nothing here knows about HTTP.
 */

/** The most imports a list answers. */
export const MAX_LISTED_IMPORTS = 1000
/** How long a drain waits by default, and at most (real time: waiting is not the service's clock). */
export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000
export const MAX_DRAIN_TIMEOUT_MS = 600_000
/** How often a drain looks again while another worker runs an import of the company. */
const DRAIN_POLL_MS = 20

/** An import as `GET /v1/imports/{id}` shows it (`data_import`), with what the admin needs besides. */
export const AdminImportViewSchema = Type.Object({
  ...ImportViewSchema.properties,
  target: Type.Enum([...IMPORT_TARGETS], { description: 'What the import writes' }),
  window_ends_at: Type.String({ description: 'Until when calls may join it (its debounce window): it runs from then on' }),
  attempts: Type.Integer({ description: 'How many times a worker claimed it (more than 1: a worker died or handed it back)' }),
})
export type AdminImportView = Static<typeof AdminImportViewSchema>

export const AdminImportListSchema = Type.Object({ count: Type.Integer(), data: Type.Array(AdminImportViewSchema) })
export type AdminImportList = Static<typeof AdminImportListSchema>

function adminView(data: DataImport): AdminImportView {
  return { ...importView(data), target: data.target, window_ends_at: data.window_ends_at, attempts: data.attempts }
}

/** The company's imports, newest first: at most `limit`, and only those in `status` when it is given. */
export async function listImports(
  store: Store,
  companyId: string,
  filter: { status?: ImportStatus; limit?: number },
): Promise<AdminImportList> {
  const company = (await existingCompany(store, companyId)).id
  const imports = await store.imports.list(company, { status: filter.status, limit: filter.limit ?? MAX_LISTED_IMPORTS })
  return { count: imports.length, data: imports.map(adminView) }
}

/**
 * Runs every import of the company that is not finished, closing their debounce windows first, and answers once
 * none is scheduled or running: with the imports it saw unfinished, as they finished, oldest first. `worker` runs
 * them here (claims of this company only); an import another worker is running is waited for. Windows opened by
 * calls that arrive meanwhile are closed too. Past `timeoutMs` (real time), TimedOutError: nothing is undone,
 * the imports go on (one this drain was running, in this process: the answer does not wait for it). A run in one
 * synchronous transaction (SQLite's) delays the answer until it commits: nothing answers while it holds the thread.
 */
export async function drainImports(
  store: Store,
  clock: Clock,
  worker: Pick<ImportWorker, 'runOnce'>,
  companyId: string,
  timeoutMs: number,
  options: { onLateFailure?: (error: unknown) => void } = {},
): Promise<AdminImportList> {
  const company = (await existingCompany(store, companyId)).id
  const deadline = Date.now() + timeoutMs
  const seen = new Set<string>()
  const unfinishedNow = async () => {
    // One read of both: read apart, an import handed back to `scheduled` (by a worker that stops, or finds the store
    // busy) between the two would be in neither, and the drain would answer while it waits to run.
    const unfinished = await store.imports.list(company, { status: UNFINISHED, limit: ALL_UNFINISHED })
    for (const data of unfinished) seen.add(data.id)
    return unfinished
  }
  for (;;) {
    await clock.sync?.()
    await store.imports.closeWindows(company, clock.now().toISOString())
    let unfinished = await unfinishedNow()
    if (unfinished.length === 0) break
    if (Date.now() >= deadline) throw timedOut(unfinished, timeoutMs)
    const run = worker.runOnce(company)
    const outcome = await settledBefore(run, deadline)
    if (outcome === 'late') {
      // The deadline bounds the wait for the drain's own run too: the answer does not wait for it, and the run goes
      // on (the CLI waits for it before it closes the store: `worker.idle()`). The worker reports what fails in the
      // import itself; what fails around it (its claim's store) goes to `onLateFailure`, the import to its lease.
      run.catch((error: unknown) => options.onLateFailure?.(error))
      unfinished = await unfinishedNow()
      if (unfinished.length === 0) break
      throw timedOut(unfinished, timeoutMs)
    }
    // Another worker running an import of the company: this one waits for it.
    if (!outcome.value) await sleep(DRAIN_POLL_MS)
  }
  const drained: AdminImportView[] = []
  for (const id of [...seen].toSorted()) {
    const data = await store.imports.get(company, id)
    if (data) drained.push(adminView(data))
  }
  // Imports it saw, gone: the company was deleted meanwhile, which an empty answer would hide (a reset keeps the
  // company: its imports go with the data the reset replaces).
  if (drained.length < seen.size) await existingCompany(store, companyId)
  return { count: drained.length, data: drained }
}

function timedOut(unfinished: DataImport[], timeoutMs: number): TimedOutError {
  return new TimedOutError({
    resource: 'timeout_ms',
    description: `${unfinished.length} import(s) of the company still scheduled or running after ${timeoutMs} ms: ${unfinished.map((data) => `${data.id} (${data.status})`).join(', ')}`,
  })
}

/** What `work` settled to, or 'late' when `deadline` (a `Date.now()`) passed first; the work goes on either way. */
async function settledBefore<T>(work: Promise<T>, deadline: number): Promise<{ value: T } | 'late'> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, deadline - Date.now()), 'late')
  })
  try {
    return await Promise.race([work.then((value) => ({ value })), late])
  } finally {
    clearTimeout(timer)
  }
}

/** Every unfinished import of a company: far more than one has waiting in practice. */
const ALL_UNFINISHED = 100_000
const UNFINISHED: readonly ImportStatus[] = ['scheduled', 'started']
