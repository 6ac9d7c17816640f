import { existsSync, rmSync } from 'node:fs'
import { makeDirectories } from '../durable-files.ts'
import { join } from 'node:path'
import type { CommissionClient, DataStructure, Row } from '../client/index.ts'
import { appendRows, columnsOf, commitMerge, commitReplace, fileOf, partialFileOf, truncateTo } from './row-files.ts'
import {
  lockDirectory,
  readState,
  type RunState,
  saveState,
  type StructureState,
  SyncDirectoryError,
  type SyncFormat,
  type SyncState,
} from './state.ts'

/**
 * `sync`: exports every live structure of a company (statements, records, quota values) to one file each,
 * and keeps the files up to date: the next run reads only the rows changed since the high-water mark of the
 * last, and merges them by `standard.id`. Each page is saved with a checkpoint, so that a run cut short
 * (killed, network gone) resumes after its last saved page.
 */

export interface SyncProgress {
  /** A structure's walk starts; `total` is its row count when the walk reads every row, else null. */
  start(structure: DataStructure, total: number | null, done: number): void
  advance(rows: number): void
  finish(): void
}

export interface SyncOptions {
  outDir: string
  format?: SyncFormat
  /** Read the rows changed after this instant instead of after each structure's high-water mark. */
  since?: string | null
  /** Rows a page (default 2000, the maximum). */
  limit?: number
  progress?: SyncProgress
}

export interface StructureOutcome {
  id: string
  name: string
  type: string
  file: string
  /** `full`: every row was read; `incremental`: the rows changed since `since` (merged into the file, where there was one). */
  kind: 'full' | 'incremental'
  since: string | null
  /** The run picked up an interrupted one. */
  resumed: boolean
  /** Rows read by this run (a resumed run counts those its predecessor saved). */
  fetched: number
  /** Rows now in the file. */
  rows: number
  high_water_mark: string
}

const OBJECT_ID = /^[0-9a-f]{24}$/i

const quiet: SyncProgress = { start() {}, advance() {}, finish() {} }

export async function syncStructures(client: CommissionClient, options: SyncOptions): Promise<StructureOutcome[]> {
  makeDirectories(options.outDir)
  const unlock = lockDirectory(options.outDir)
  try {
    const baseUrl = client.transport.baseUrl.href
    const previous = readState(options.outDir)
    if (previous && previous.base_url !== baseUrl) {
      throw new SyncDirectoryError(`${options.outDir} holds a sync of ${previous.base_url}: use another directory for ${baseUrl}`)
    }
    const format = options.format ?? previous?.format ?? 'ndjson'
    // Its marks and any interrupted run describe the files of its format: another format's would start from them.
    if (previous && previous.format !== format) {
      throw new SyncDirectoryError(
        `${options.outDir} holds a ${previous.format} sync: run it with --format ${previous.format}, or use another directory for ${format}`,
      )
    }
    const state: SyncState = previous ?? { version: 1, base_url: baseUrl, format, structures: {} }
    const { data: structures } = await client.listDataStructures()
    for (const { id } of structures) {
      // A structure's id names its files: another form (`../x`) would have a service write outside the directory.
      if (!OBJECT_ID.test(id)) {
        throw new SyncDirectoryError(
          `${baseUrl} answered a structure id that is not an ObjectId (${JSON.stringify(id)}): nothing is written`,
        )
      }
    }
    const outcomes: StructureOutcome[] = []
    for (const structure of structures) {
      outcomes.push(await new StructureSync(client, options, state, structure).run())
    }
    return outcomes
  } finally {
    unlock()
  }
}

/** The sync of one structure: plan (or resume) a run, walk its pages with checkpoints, commit its file. */
class StructureSync {
  readonly #client: CommissionClient
  readonly #options: SyncOptions
  readonly #state: SyncState
  readonly #structure: DataStructure
  readonly #entry: StructureState
  readonly #final: string
  readonly #partial: string

  constructor(client: CommissionClient, options: SyncOptions, state: SyncState, structure: DataStructure) {
    this.#client = client
    this.#options = options
    this.#state = state
    this.#structure = structure
    const entry = (state.structures[structure.id] ??= {
      name: structure.name,
      type: structure.type,
      file: fileOf(structure.id, state.format),
      schema_hash: null,
      columns: [],
      high_water_mark: null,
      rows: 0,
      synced_at: null,
    })
    entry.name = structure.name
    entry.file = fileOf(structure.id, state.format)
    this.#entry = entry
    this.#final = join(options.outDir, entry.file)
    this.#partial = join(options.outDir, partialFileOf(structure.id))
  }

  async run(): Promise<StructureOutcome> {
    const resumed = this.#entry.run !== undefined
    const run = await this.#plan()
    if (!run.walked) await this.#walk(run)
    const rows = await this.#commit(run)
    Object.assign(this.#entry, {
      schema_hash: run.schema_hash,
      columns: run.columns,
      high_water_mark: run.mark,
      rows,
      synced_at: new Date().toISOString(),
    })
    delete this.#entry.run
    this.#save()
    rmSync(this.#partial, { force: true })
    return {
      id: this.#structure.id,
      name: this.#structure.name,
      type: this.#structure.type,
      file: this.#entry.file,
      kind: run.since === null ? 'full' : 'incremental',
      since: run.since,
      resumed,
      fetched: run.rows,
      rows,
      high_water_mark: run.mark,
    }
  }

  /** Writes the run's rows into the structure's file; returns the file's row count. */
  async #commit(run: RunState): Promise<number> {
    const format = this.#state.format
    if (run.mode === 'replace') return commitReplace(this.#partial, this.#final, format, run.columns, run.rows)
    // Nothing changed: the file stays as it is, rather than written again whole (which takes as much room again).
    if (run.rows === 0 && existsSync(this.#final)) return this.#entry.rows
    return commitMerge(this.#partial, this.#final, format, run.columns)
  }

  /**
   * The run to do: the interrupted one if its schema still holds, else a new one, incremental when the file
   * exists with the same schema and there is a mark (or `--since`) to start from, full otherwise.
   */
  async #plan(): Promise<RunState> {
    const entry = this.#entry
    const since = entry.run ? entry.run.since : (this.#options.since ?? entry.high_water_mark)
    const changes = await this.#client.changesSince(this.#structure, since)
    const schema = changes.schema
    if (entry.run && entry.run.schema_hash === schema.schema_hash) return entry.run

    const hasFile = existsSync(this.#final)
    const incremental = since !== null && hasFile && entry.schema_hash === schema.schema_hash
    const run: RunState = {
      mode: incremental ? 'merge' : 'replace',
      // A schema change makes the file's rows stale: read them all again.
      since: incremental ? since : hasFile ? null : (this.#options.since ?? null),
      mark: changes.highWaterMark,
      schema_hash: schema.schema_hash,
      columns: columnsOf(schema),
      start_id: null,
      bytes: 0,
      rows: 0,
      walked: false,
    }
    rmSync(this.#partial, { force: true })
    entry.run = run
    this.#save()
    return run
  }

  async #walk(run: RunState): Promise<void> {
    const progress = this.#options.progress ?? quiet
    progress.start(this.#structure, run.mode === 'replace' && run.since === null ? this.#structure.total_records : null, run.rows)
    // What a killed run wrote after its last checkpoint is cut off: those rows are read again.
    await truncateTo(this.#partial, run.bytes)
    const pages = this.#client.pages(this.#structure, {
      limit: this.#options.limit ?? 2000,
      start_id: run.start_id ?? undefined,
      last_modified_after: run.since ?? undefined,
    })
    for await (const page of pages) {
      run.bytes = await appendRows(this.#partial, page.data)
      run.rows += page.data.length
      const last: Row | undefined = page.data.at(-1)
      if (last) run.start_id = String(last['standard.id'])
      this.#save()
      progress.advance(run.rows)
    }
    run.walked = true
    this.#save()
    progress.finish()
  }

  #save(): void {
    saveState(this.#options.outDir, this.#state)
  }
}
