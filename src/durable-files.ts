import { closeSync, fsyncSync, openSync, renameSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'

/** Writes `text` to `path` and flushes it, and its entry in its directory, to the disk before returning. */
export function writeDurably(path: string, text: string, mode = 0o666): void {
  const fd = openSync(path, 'w', mode)
  try {
    writeSync(fd, text)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  flushDirectory(dirname(path))
}

/** Replaces `path` by `from` (a file written durably), and flushes the rename itself to the disk. */
export function renameDurably(from: string, path: string): void {
  renameSync(from, path)
  flushDirectory(dirname(path))
}

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
