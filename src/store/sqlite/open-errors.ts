import { statSync } from 'node:fs'
import { StoreUpgradedError } from '../port.ts'
import { StoreOpenError } from '../store-open-error.ts'

/** A database file that holds tables but none of ours: another application's, which we must not migrate. */
export class ForeignDatabaseError extends Error {
  override name = 'ForeignDatabaseError'
}

/** SQLite's primary result codes that say why a file cannot be used (the low byte of an extended code). */
const CANNOT_WRITE = new Set([8 /* READONLY */, 14 /* CANTOPEN */, 23 /* AUTH */, 3 /* PERM */])
const NOT_A_DATABASE = 26
const CORRUPT = 11

/** What went wrong opening the SQLite file `file`, as a StoreOpenError that names the file, what it holds and the cause. */
export function sqliteOpenError(file: string, error: unknown, holding = 'the SQLite store'): StoreOpenError {
  // SQLite says only that it cannot open the file, which the causes below would tell as a file it may not write.
  const cause = isDirectory(file) ? 'a directory stands where the file should be' : sqliteCause(error)
  return new StoreOpenError(`cannot open ${holding} ${file}: ${cause}`, { cause: error })
}

function isDirectory(file: string): boolean {
  try {
    return statSync(file).isDirectory()
  } catch {
    return false
  }
}

function sqliteCause(error: unknown): string {
  if (error instanceof ForeignDatabaseError || error instanceof StoreUpgradedError) return error.message
  const { errcode, code, message } = error as { errcode?: number; code?: string; message?: string }
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') return 'DATA_DIR is not writable'
  if (code === 'ENOTDIR' || code === 'EEXIST') return 'a file stands where DATA_DIR or a directory inside it should be'
  if (typeof errcode === 'number') {
    const primary = errcode & 0xff
    if (primary === NOT_A_DATABASE)
      return 'the file is not a SQLite database (corrupt, or another kind of file): move it away or point DATA_DIR elsewhere'
    if (primary === CORRUPT) return 'the database file is corrupt: restore it from a backup or point DATA_DIR elsewhere'
    if (CANNOT_WRITE.has(primary)) return 'the file or its directory is not writable by this user'
  }
  return message ?? String(error)
}
