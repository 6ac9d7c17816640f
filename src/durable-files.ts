import { closeSync, fsyncSync, openSync, renameSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'

/** Writes `text` to `path` and flushes it to the disk before returning. */
export function writeDurably(path: string, text: string, mode = 0o666): void {
  const fd = openSync(path, 'w', mode)
  try {
    writeSync(fd, text)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** Replaces `path` by `from` (a file written durably), and flushes the rename itself to the disk. */
export function renameDurably(from: string, path: string): void {
  renameSync(from, path)
  const fd = openSync(dirname(path), 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}
