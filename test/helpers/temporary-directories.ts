import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const made: string[] = []

/** A new directory under the system's temporary one, removed once the test file is done (test/setup.ts). */
export function temporaryDirectory(prefix: string): string {
  const directory = mkdtempSync(join(tmpdir(), prefix))
  made.push(directory)
  return directory
}

export function removeTemporaryDirectories(): void {
  for (const directory of made.splice(0)) {
    // A child process still exiting may write into it, or a test's tmpfs still be mounted on it: what is left is
    // the system's to clean, and a test file must not fail for it.
    try {
      rmSync(directory, { recursive: true, force: true, maxRetries: 3 })
    } catch {}
  }
}
