import { spawnSync } from 'node:child_process'
import { statfsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDataDir } from './process.ts'

/** Small disks to fill up: a tmpfs, which only root can mount. */

/** Mounts a tmpfs of `size` (`512k`, `16m`) on a new directory and returns it; throws where none can be mounted. */
export function mountSmallDisk(size = '512k'): string {
  const dir = tempDataDir()
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir])
  if (mounted.status !== 0) throw new Error(`cannot mount a tmpfs on ${dir}: ${mounted.stderr}`)
  return dir
}

export function unmount(dir: string): void {
  spawnSync('umount', [dir])
}

/** Whether this machine lets the tests mount one; the title's note of a suite that cannot run without. */
export const SMALL_DISKS = (() => {
  try {
    unmount(mountSmallDisk())
    return true
  } catch {
    return false
  }
})()
export const SMALL_DISKS_NOTE = SMALL_DISKS ? '' : ' (NOT RUN: a tmpfs cannot be mounted here, which needs root)'

/** Fills the disk of `dir` with a file (`name`) until `room` bytes are left; returns the file's path. */
export function fillLeaving(dir: string, room: number, name = 'filler'): string {
  const { bavail, bsize } = statfsSync(dir)
  const path = join(dir, name)
  writeFileSync(path, Buffer.alloc(Math.max(0, bavail * bsize - room)))
  return path
}
