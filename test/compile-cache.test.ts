import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { startScriptFlags } from '../bench/server-flags.ts'
import { CLI, startProcess, tempDataDir } from './helpers/process.ts'
import { childEnvironment } from './helpers/test-store.ts'

/**
 * `serve` started as `npm start` starts it (the start script's node flags), with `temporary` as the system's
 * temporary folder and no NODE_COMPILE_CACHE: the cache's default place is `temporary`/node-compile-cache.
 */
function startAsNpmStart(temporary: string, env: Record<string, string> = {}) {
  const environment = childEnvironment(process.env, {
    PORT: '0',
    DEMO: 'off',
    LOG_LEVEL: 'warn',
    DATA_DIR: tempDataDir(),
    TMPDIR: temporary,
    ...env,
  })
  delete environment.NODE_COMPILE_CACHE
  const server = startProcess(process.execPath, [...startScriptFlags(), CLI, 'serve'], { env: environment })
  return { server, listening: () => server.waitFor(/listening on http/) }
}

/** Every file under `folder`, recursively. */
const filesUnder = (folder: string) => readdirSync(folder, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile())

/** The TypeScript files of src/ that Node's compile cache debug log (NODE_DEBUG_NATIVE=COMPILE_CACHE) says it read from the cache, or had to strip. */
function strippedFiles(log: string) {
  const files = (pattern: RegExp) => [...log.matchAll(pattern)].map(([, file]) => file.replace(/^.*\/src\//, 'src/'))
  return {
    fromCache: files(/retrieving transpile cache for StrippedTypeScript (file:\S+\/src\/\S+\.ts)\.\.\.success/g),
    stripped: files(/no transpile cache for StrippedTypeScript (file:\S+\/src\/\S+\.ts)/g),
  }
}

describe("npm start's compile cache (scripts/compile-cache.mjs)", () => {
  it('is written once the server has started, and a second start strips no TypeScript file, in the HTTP thread or the import worker thread', async () => {
    const temporary = tempDataDir()
    const cacheDir = join(temporary, 'node-compile-cache')
    const first = startAsNpmStart(temporary)
    try {
      await first.listening()
      // Written while the server runs, not only at its exit: a server that is killed leaves it too.
      expect(filesUnder(cacheDir).length).toBeGreaterThan(50)
    } finally {
      expect(await first.server.stop('SIGKILL')).toBe(null)
    }

    const second = startAsNpmStart(temporary, { NODE_DEBUG_NATIVE: 'COMPILE_CACHE' })
    try {
      await second.listening()
      const { fromCache, stripped } = strippedFiles(second.server.errors())
      expect(stripped).toEqual([])
      expect(fromCache).toEqual(expect.arrayContaining(['src/cli.ts', 'src/app.ts', 'src/worker-thread.ts']))
    } finally {
      expect(await second.server.stop()).toBe(0)
    }
  }, 60_000)

  it('is off with NODE_DISABLE_COMPILE_CACHE=1', async () => {
    const temporary = tempDataDir()
    const { server, listening } = startAsNpmStart(temporary, { NODE_DISABLE_COMPILE_CACHE: '1' })
    try {
      await listening()
    } finally {
      expect(await server.stop()).toBe(0)
    }
    expect(existsSync(join(temporary, 'node-compile-cache'))).toBe(false)
  }, 60_000)
})
