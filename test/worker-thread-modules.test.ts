import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { CLI, startProcess, tempDataDir } from './helpers/process.ts'
import { until } from './helpers/kit-server.ts'
import { call } from './helpers/server.ts'
import { childEnvironment } from './helpers/test-store.ts'

/**
 * The import worker's thread serves no HTTP: it loads none of the HTTP tier's packages, each of which costs the
 * thread its memory (TypeBox alone about 8 MiB of the server's resident memory, docs/performance.md).
 */
describe("the import worker's thread", () => {
  it('loads no Fastify, no TypeBox and, on the embedded store, no MongoDB driver', async () => {
    const dir = tempDataDir()
    const hook = join(dir, 'packages-of-the-worker-thread.mjs')
    const seen = join(dir, 'packages.txt')
    writeFileSync(
      hook,
      `import { appendFileSync } from 'node:fs'
       import { registerHooks } from 'node:module'
       import { isMainThread } from 'node:worker_threads'
       if (!isMainThread) registerHooks({ resolve(specifier, context, next) {
         if (!specifier.startsWith('.') && !specifier.startsWith('node:') && !specifier.startsWith('file:')) appendFileSync(${JSON.stringify(seen)}, specifier + '\\n')
         return next(specifier, context)
       } })`,
    )
    writeFileSync(seen, '')
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
      const packages = new Set(readFileSync(seen, 'utf8').split('\n').filter(Boolean))
      // The thread did load its own modules' packages: the hook saw it start.
      expect(packages.size).toBeGreaterThan(0)
      for (const name of ['fastify', 'typebox', 'mongodb', '@fastify/type-provider-typebox'])
        expect(
          [...packages].filter((specifier) => specifier === name || specifier.startsWith(`${name}/`)),
          name,
        ).toEqual([])
    } finally {
      await server.stop()
    }
  })
})
