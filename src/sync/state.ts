import { accessSync, constants, existsSync, readFileSync, rmSync } from 'node:fs'
import { DatabaseSync } from 'node:sqlite'
import { join } from 'node:path'
import { renameDurably, writeDurably } from '../durable-files.ts'

/**
 * The state file of a sync directory: per structure, what the files hold (the high-water mark, the schema
 * they were written with) and, while a run is under way, how far it got, so that an interrupted run resumes.
 */

export const STATE_FILE = 'sync-state.json'
const LOCK_FILE = 'sync.lock.db'
const LEGACY_LOCK_FILE = 'sync.lock'

export type SyncFormat = 'ndjson' | 'csv'

/**
 * The sync directory cannot be used: another service's rows, another sync writing to it, or a service whose
 * answer would have it write outside it.
 */
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

/** SQLite's result code for a lock another connection holds. */
const SQLITE_BUSY = 5

/** The locks this process holds: a lock's connection closed by the garbage collector would release it. */
const held = new Set<DatabaseSync>()

/**
 * Takes the directory for this process: an exclusive lock on `sync.lock.db` (an empty SQLite database), which the
 * operating system drops when the process ends, however it ends. A run killed (kill -9, its container stopped)
 * leaves nothing to take over, whatever process id the next run gets (in a container, the same every time). The
 * file stays: removing it could let two runs lock two files of the same name. It needs the file system's locks
 * (not an NFS mount without them). Returns the release.
 */
export function lockDirectory(dir: string): () => void {
  // A directory this process cannot write to is told as the file system says it, not as SQLite's "unable to open".
  accessSync(dir, constants.W_OK)
  const lock = new DatabaseSync(join(dir, LOCK_FILE), { timeout: 0 })
  try {
    lock.exec('BEGIN EXCLUSIVE')
  } catch (error) {
    lock.close()
    if ((error as { errcode?: number }).errcode === SQLITE_BUSY) {
      throw new SyncDirectoryError(`another sync is writing to ${dir}`, { cause: error })
    }
    throw error
  }
  held.add(lock)
  const release = () => {
    held.delete(lock)
    lock.close()
  }
  try {
    // The lock file of earlier versions, a process id in a text file: whoever wrote it is gone, or an older version.
    rmSync(join(dir, LEGACY_LOCK_FILE), { force: true })
  } catch (error) {
    release()
    throw error
  }
  return release
}
