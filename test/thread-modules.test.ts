import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { CLI, startProcess, tempDataDir } from './helpers/process.ts'
import { until } from './helpers/kit-server.ts'
import { call } from './helpers/server.ts'
import { childEnvironment } from './helpers/test-store.ts'

/**
 * Each package a thread loads costs the server its memory (TypeBox alone about 8 MiB of the server's resident
 * memory, undici about 6: docs/performance.md, "Memory"): a thread loads only what its work needs.
 */

/**
 * The packages (bare specifiers, as imported) each thread of `serve` resolved once it was ready, on an empty
 * embedded store without the demo company: `main` for the HTTP thread, `worker` for the import worker's.
 */
async function packagesAtRest(): Promise<{ main: Set<string>; worker: Set<string> }> {
  const dir = tempDataDir()
  const hook = join(dir, 'packages-of-each-thread.mjs')
  const seen = { main: join(dir, 'main.txt'), worker: join(dir, 'worker.txt') }
  writeFileSync(
    hook,
    `import { appendFileSync } from 'node:fs'
     import { registerHooks } from 'node:module'
     import { isMainThread } from 'node:worker_threads'
     const seen = ${JSON.stringify(seen)}[isMainThread ? 'main' : 'worker']
     registerHooks({ resolve(specifier, context, next) {
       if (!specifier.startsWith('.') && !specifier.startsWith('node:') && !specifier.startsWith('file:')) appendFileSync(seen, specifier + '\\n')
       return next(specifier, context)
     } })`,
  )
  for (const file of Object.values(seen)) writeFileSync(file, '')
  const server = startProcess(process.execPath, ['--import', hook, CLI, 'serve'], {
    env: childEnvironment(process.env, { DATA_DIR: join(dir, 'data'), PORT: '0', DEMO: 'off', LOG_LEVEL: 'info' }),
  })
  try {
    const [, url] = await server.waitFor(/listening on (http:\/\/\S+)/)
    // Ready once the worker's thread has started (role all).
    const ready = await until(
      () => call(`${url}/health/ready`),
      (reply) => reply.status === 200,
    )
    expect(ready.status).toBe(200)
    return { main: packagesIn(seen.main), worker: packagesIn(seen.worker) }
  } finally {
    await server.stop()
  }
}

const packagesIn = (file: string) => new Set(readFileSync(file, 'utf8').split('\n').filter(Boolean))

/** The specifiers among `packages` of any of the packages `names`, or of their subpaths. */
const ofPackages = (packages: Set<string>, names: readonly string[]) =>
  [...packages].filter((specifier) => names.some((name) => specifier === name || specifier.startsWith(`${name}/`)))

describe('the packages each thread of serve loads', () => {
  let atRest: { main: Set<string>; worker: Set<string> }
  beforeAll(async () => {
    atRest = await packagesAtRest()
  })

  it("the import worker's thread: no Fastify, no TypeBox and, on the embedded store, no MongoDB driver", () => {
    const { worker } = atRest
    // The thread did load its own modules' packages: the hook saw it start.
    expect(worker.size).toBeGreaterThan(0)
    expect(ofPackages(worker, ['fastify', 'typebox', 'mongodb', '@fastify/type-provider-typebox'])).toEqual([])
  })

  it("the HTTP thread: not the client's HTTP library, nor sync's, nor TypeBox's fixture checkers until a fixture is loaded", () => {
    const { main } = atRest
    expect(ofPackages(main, ['fastify', 'typebox'])).not.toEqual([])
    expect(ofPackages(main, ['undici', 'cli-progress', 'csv-parse', 'csv-stringify', 'mongodb'])).toEqual([])
    expect(ofPackages(main, ['typebox']).filter((specifier) => specifier !== 'typebox')).toEqual([])
  })
})
