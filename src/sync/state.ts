import { closeSync, existsSync, openSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { renameDurably, writeDurably, writeFullySync } from '../durable-files.ts'

/**
 * The state file of a sync directory: per structure, what the files hold (the high-water mark, the schema
 * they were written with) and, while a run is under way, how far it got, so that an interrupted run resumes.
 */

export const STATE_FILE = 'sync-state.json'
const LOCK_FILE = 'sync.lock'

export type SyncFormat = 'ndjson' | 'csv'

/** The sync directory cannot be used: another service's rows, or another sync writing to it. */
export class SyncDirectoryError extends Error {
  override name = 'SyncDirectoryError'
}

/** A walk under way: where it stands, so that a new run picks it up after its last saved page. */
export interface RunState {
  /** `replace`: the walk reads every row and becomes the file; `merge`: the walk reads changes, merged in by `standard.id`. */
  mode: 'replace' | 'merge'
  since: string | null
  /** The high-water mark the structure gets once the run is committed. */
  mark: string
  schema_hash: string
  columns: string[]
  /** The id of the last row saved: the walk resumes after it (null: from the beginning). */
  start_id: string | null
  /** Bytes and rows of the partial file covered by the saved pages (later bytes are cut off on resume). */
  bytes: number
  rows: number
  /** Every page is saved: what remains is to commit the partial file. */
  walked: boolean
}

export interface StructureState {
  name: string
  type: string
  file: string
  schema_hash: string | null
  columns: string[]
  high_water_mark: string | null
  rows: number
  synced_at: string | null
  run?: RunState
}

export interface SyncState {
  version: 1
  base_url: string
  format: SyncFormat
  structures: Record<string, StructureState>
}

export function readState(dir: string): SyncState | null {
  const path = join(dir, STATE_FILE)
  if (!existsSync(path)) return null
  const state = JSON.parse(readFileSync(path, 'utf8')) as SyncState
  if (state.version !== 1 || typeof state.structures !== 'object') throw new Error(`${path} is not a sync state file this version reads`)
  return state
}

/** Writes the state atomically: a crash leaves the previous state or the new one, never half of one. */
export function saveState(dir: string, state: SyncState): void {
  const path = join(dir, STATE_FILE)
  writeDurably(`${path}.tmp`, `${JSON.stringify(state, null, 2)}\n`)
  renameDurably(`${path}.tmp`, path)
}

/**
 * Takes the directory for this process. A lock left by a process that no longer runs (killed) is taken
 * over: that is the interrupted run the state file lets us resume.
 */
export function lockDirectory(dir: string): () => void {
  const path = join(dir, LOCK_FILE)
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx')
      writeFullySync(fd, String(process.pid))
      closeSync(fd)
      return () => rmSync(path, { force: true })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const holder = Number(readFileSync(path, 'utf8'))
      if (Number.isInteger(holder) && holder > 0 && isRunning(holder)) {
        throw new SyncDirectoryError(`another sync (process ${holder}) is writing to ${dir}`, { cause: error })
      }
      rmSync(path, { force: true })
    }
  }
  throw new Error(`cannot lock ${dir}`)
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
