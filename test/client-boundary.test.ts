import { execFileSync, spawnSync } from 'node:child_process'
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { temporaryDirectory } from './helpers/temporary-directories.ts'

const ROOT = resolve(import.meta.dirname, '..')

/** Every module URL that importing `specifier` loads, read from a child process through Node's resolve hook. */
function modulesLoadedBy(specifier: string): string[] {
  const script = `
    import { registerHooks } from 'node:module'
    const loaded = new Set()
    registerHooks({ resolve(specifier, context, next) { const found = next(specifier, context); loaded.add(found.url); return found } })
    await import(${JSON.stringify(specifier)})
    console.log(JSON.stringify([...loaded]))`
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' }))
}

/** The loaded modules that are neither built into Node nor allowed: paths relative to the repository. */
function outside(loaded: string[], allowed: string[]): string[] {
  return loaded
    .filter((url) => !url.startsWith('node:'))
    .map((url) => new URL(url).pathname.slice(ROOT.length + 1))
    .filter((path) => !allowed.some((prefix) => path.startsWith(prefix)))
}

describe('the client is a consumer of the interface like any other', () => {
  it('commission-api/client loads its own modules and undici, none of the server', () => {
    const loaded = modulesLoadedBy('commission-api/client')
    expect(loaded.some((url) => url.endsWith('/src/client/index.ts'))).toBe(true)
    expect(outside(loaded, ['src/client/', 'node_modules/undici/'])).toEqual([])
  })

  it("type-checks in a connector's own project, which links a checkout as docs/clients.md says", () => {
    // The linked checkout is source to the connector's tsc: every module the client's types import is checked
    // there, without the augmentations of Fastify that the server's entry point brings along.
    const dir = temporaryDirectory('commission-api-connector-')
    mkdirSync(join(dir, 'node_modules'))
    symlinkSync(ROOT, join(dir, 'node_modules', 'commission-api'))
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'connector', type: 'module', private: true }))
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          target: 'es2024',
          lib: ['es2024'],
          module: 'nodenext',
          moduleResolution: 'nodenext',
          allowImportingTsExtensions: true,
          types: ['node'],
          typeRoots: [join(ROOT, 'node_modules/@types')],
        },
        files: ['connector.ts'],
      }),
    )
    writeFileSync(
      join(dir, 'connector.ts'),
      `import { CommissionClient } from 'commission-api/client'
const client = new CommissionClient({ baseUrl: 'http://127.0.0.1:3000', apiKey: 'cak_0000000000000000' })
const { data: structures } = await client.listDataStructures()
export const names: string[] = structures.map((structure) => structure.name)
`,
    )
    const tsc = resolve(ROOT, 'node_modules/typescript/bin/tsc')
    const checked = spawnSync(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { encoding: 'utf8' })
    expect(checked.stdout + checked.stderr).toBe('')
    expect(checked.status).toBe(0)
  })

  it('so do sync and conformance, which are built on it', () => {
    for (const [entry, own] of [
      ['./src/sync/sync.ts', 'src/sync/'],
      ['./src/sync/progress.ts', 'src/sync/'],
      ['./src/conformance/conformance.ts', 'src/conformance/'],
    ]) {
      // src/durable-files.ts: writes flushed to the disk, node:fs alone, shared with the server's demo key file.
      const loaded = outside(modulesLoadedBy(entry), ['src/client/', own, 'src/durable-files.ts', 'node_modules/'])
      expect(loaded, entry).toEqual([])
      const packages = new Set(modulesLoadedBy(entry).flatMap((url) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1] ?? []))
      for (const server of ['fastify', 'mongodb', 'typebox', 'pino', 'bson'])
        expect(packages.has(server), `${entry} loads ${server}`).toBe(false)
    }
  })
})
