import { Presets, SingleBar } from 'cli-progress'
import type { DataStructure } from '../client/index.ts'
import type { SyncProgress } from './sync.ts'

/**
 * A progress bar a structure on a terminal; nothing at all when `stream` is not one (a pipe, a file, CI),
 * so that logs stay clean.
 */
export function terminalProgress(stream: NodeJS.WriteStream): SyncProgress | undefined {
  if (!stream.isTTY) return undefined
  let bar: SingleBar | null = null
  let known = true
  return {
    start(structure: DataStructure, total: number | null, done: number) {
      known = total !== null
      bar = new SingleBar(
        {
          stream,
          format: known ? '{name} {bar} {value}/{total} rows' : '{name} {value} changed rows',
          hideCursor: true,
          clearOnComplete: false,
          noTTYOutput: false,
        },
        Presets.shades_classic,
      )
      bar.start(total ?? 0, done, { name: structure.name.padEnd(28).slice(0, 28) })
    },
    advance(rows: number) {
      if (!known) bar?.setTotal(rows)
      bar?.update(rows)
    },
    finish() {
      bar?.stop()
      bar = null
    },
  }
}
