import { closeSync, constants, existsSync, fsyncSync, linkSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import { dirname, resolve } from 'node:path'

/**
 * Writes `text` to `path` and flushes it, and its entry in its directory, to the disk before returning. A write
 * that fails (a full disk) removes what it wrote, so as not to hold the room that others need.
 */
export function writeDurably(path: string, text: string, mode = 0o666): void {
  const fd = openSync(path, 'w', mode)
  try {
    writeFullySync(fd, text)
    fsyncSync(fd)
  } catch (error) {
    rmSync(path, { force: true })
    throw error
  } finally {
    closeSync(fd)
  }
  flushDirectory(dirname(path))
}

/**
 * Writes all of `text`. One write(2) may write only a part, without an error, when the disk fills up (the next one
 * then fails with ENOSPC): Node's `write` returns what was written, and a caller that ignored it would keep a file
 * cut short as if it were whole.
 */
export function writeFullySync(fd: number, text: string): void {
  const bytes = Buffer.from(text)
  for (let offset = 0; offset < bytes.length;) offset += writtenOrThrow(writeSync(fd, bytes, offset))
}

/** `writeFullySync` on a FileHandle. */
export async function writeFully(handle: FileHandle, text: string): Promise<void> {
  const bytes = Buffer.from(text)
  for (let offset = 0; offset < bytes.length;) offset += writtenOrThrow((await handle.write(bytes, offset)).bytesWritten)
}

/** A write that wrote nothing and reported no error would loop for good. */
function writtenOrThrow(written: number): number {
  if (written > 0) return written
  throw Object.assign(new Error('ENOSPC: no space left on the device, write (a write wrote nothing)'), { code: 'ENOSPC', syscall: 'write' })
}

/** Replaces `path` by `from` (a file written durably), and flushes the rename itself to the disk. */
export function renameDurably(from: string, path: string): void {
  renameSync(from, path)
  flushDirectory(dirname(path))
}

/**
 * Flushes `from` (a file written whole) to the disk and gives it the name `path` as well, never replacing a file there
 * (EEXIST), then flushes that name. A file system without hard links (some network shares) takes a rename instead,
 * after a look that nothing stands at `path`.
 */
export function linkDurably(from: string, path: string): void {
  const fd = openSync(from, 'r+')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  try {
    linkSync(from, path)
  } catch (error) {
    if (!NO_HARD_LINKS.has((error as NodeJS.ErrnoException).code ?? '')) throw error
    if (existsSync(path)) throw Object.assign(new Error(`EEXIST: file already exists, link '${from}' -> '${path}'`), { code: 'EEXIST' })
    renameSync(from, path)
  }
  flushDirectory(dirname(path))
}

/** What link(2) answers on a file system that has no hard links. */
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS'])

/**
 * Flushes a directory's entries (a file created or renamed in it) to the disk. Where a directory cannot be opened
 * for that (Windows), the file system orders them itself, and nothing more can be done.
 */
function flushDirectory(dir: string): void {
  let fd: number
  try {
    fd = openSync(dir, 'r')
  } catch (error) {
    if (CANNOT_FLUSH.has((error as NodeJS.ErrnoException).code ?? '')) return
    throw error
  }
  try {
    fsyncSync(fd)
  } catch (error) {
    if (!CANNOT_FLUSH.has((error as NodeJS.ErrnoException).code ?? '')) throw error
  } finally {
    closeSync(fd)
  }
}

/** What opening or flushing a directory answers where directories cannot be flushed (Windows). */
const CANNOT_FLUSH = new Set(['EISDIR', 'EINVAL', 'EPERM', 'EBADF'])

/** The embedded store's directories and files are their owner's only: they hold every company's data. */
export const PRIVATE_DIRECTORY_MODE = 0o700
export const PRIVATE_FILE_MODE = 0o600

/**
 * Makes a database file of the embedded store, empty and its owner's only, with the directories missing above it
 * (also its owner's only), where it does not exist yet; an existing one is left as it is. SQLite gives the files it
 * makes beside it (its WAL, its shared memory) the database file's permissions.
 */
export function makePrivateFile(path: string): void {
  makeDirectories(dirname(path), PRIVATE_DIRECTORY_MODE)
  try {
    closeSync(openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, PRIVATE_FILE_MODE))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  }
}

/**
 * Creates the directory `path` and its missing parents (with `mode`, less the umask), one level at a time. Node's
 * recursive mkdir spins for ever under a directory that refuses new entries with ENOENT (procfs: `/proc/data`), where
 * one level at a time it is an error the start reports.
 */
export function makeDirectories(path: string, mode = 0o777): void {
  const missing: string[] = []
  for (let directory = resolve(path); !existsSync(directory); directory = dirname(directory)) {
    missing.unshift(directory)
    if (dirname(directory) === directory) break
  }
  for (const directory of missing) {
    try {
      mkdirSync(directory, { mode })
    } catch (error) {
      // Another process made it meanwhile.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
  }
  // Nothing left to make: a no-op for a directory, EEXIST for a file that stands where it should be.
  mkdirSync(path, { recursive: true })
}
