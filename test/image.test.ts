import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { startProcess, tempDataDir } from './helpers/process.ts'
import { call } from './helpers/server.ts'

/**
 * No Docker engine runs here, so the image is checked by doing what the Dockerfile does: the production-only
 * install of its first stage, the files its last stage copies, its environment and its command, on Node 24 (the
 * image's base), and the result must boot and answer.
 */
const root = new URL('../', import.meta.url)

interface Instruction {
  keyword: string
  args: string
}

/** The Dockerfile's stages, each a list of instructions (continuation lines joined, comments dropped). */
function dockerfileStages(): Array<{ from: string; name: string | null; instructions: Instruction[] }> {
  const text = readFileSync(new URL('Dockerfile', root), 'utf8').replace(/\\\n\s*/g, ' ')
  const stages: Array<{ from: string; name: string | null; instructions: Instruction[] }> = []
  for (const line of text.split('\n').map((raw) => raw.trim())) {
    if (line === '' || line.startsWith('#')) continue
    const [, keyword, args] = /^(\w+)\s+(.*)$/.exec(line) ?? []
    if (keyword.toUpperCase() === 'FROM') {
      const [, image, name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args) ?? []
      stages.push({ from: image, name: name ?? null, instructions: [] })
    } else {
      stages.at(-1)!.instructions.push({ keyword: keyword.toUpperCase(), args })
    }
  }
  return stages
}

/** `KEY=value KEY2=value2` of an ENV instruction. */
const envOf = (args: string) => Object.fromEntries([...args.matchAll(/(\w+)=(\S+)/g)].map(([, key, value]) => [key, value]))

describe('the image, as the Dockerfile builds it', () => {
  const stages = dockerfileStages()
  const dependencies = stages[0]
  const image = stages.at(-1)!
  const of = (stage: typeof image, keyword: string) => stage.instructions.filter((instruction) => instruction.keyword === keyword)

  it('is Node 24 with production dependencies only, run as a non-root user', () => {
    for (const stage of stages) expect(stage.from).toMatch(/^node:24(-|$)/)
    expect(of(dependencies, 'RUN').map((run) => run.args)).toEqual(['npm ci --omit=dev --ignore-scripts'])
    expect(of(image, 'USER').map((user) => user.args)).toEqual(['node'])
    expect(of(image, 'COPY').map((copy) => copy.args)).toEqual([
      `--from=${dependencies.name} /app/node_modules ./node_modules`,
      'package.json ./',
      'src ./src',
    ])
    // npm is removed from the image: nothing of it is needed at run time.
    expect(of(image, 'RUN').some((run) => run.args.includes('/usr/local/bin/npm'))).toBe(true)
  })

  it('boots from a production-only install and answers /health/ready, the v2 interface and the documentation page', async () => {
    const app = join(tempDataDir(), 'app')
    const installed = join(tempDataDir(), 'dependencies')
    mkdirSync(app)
    mkdirSync(installed)
    // The first stage: the lockfile's production dependencies, installed by npm as the RUN line says.
    for (const file of ['package.json', 'package-lock.json']) cpSync(new URL(file, root), join(installed, file))
    const [npmCi] = of(dependencies, 'RUN').map((run) => run.args.split(' '))
    const install = spawnSync(npmCi[0], [...npmCi.slice(1), '--no-audit', '--no-fund', '--prefer-offline'], {
      cwd: installed,
      encoding: 'utf8',
      timeout: 240_000,
    })
    expect(install.status, install.stderr).toBe(0)

    // The last stage: what it copies, where its WORKDIR is.
    cpSync(join(installed, 'node_modules'), join(app, 'node_modules'), { recursive: true })
    for (const copy of of(image, 'COPY').filter((instruction) => !instruction.args.startsWith('--from'))) {
      const [source, target] = copy.args.split(' ')
      cpSync(new URL(source, root), join(app, target === './' ? source : target), { recursive: true })
    }

    // No package that the lockfile marks as a development dependency is there.
    const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8')) as { packages: Record<string, { dev?: boolean }> }
    const present = (path: string) => existsSync(join(app, path))
    const devOnly = Object.entries(lock.packages).filter(([path, entry]) => path !== '' && entry.dev)
    expect(devOnly.length).toBeGreaterThan(20)
    expect(devOnly.filter(([path]) => present(path)).map(([path]) => path)).toEqual([])
    for (const name of ['vitest', 'typescript', 'oxlint', 'node']) expect(present(`node_modules/${name}`), name).toBe(false)
    expect(readdirSync(join(app, 'node_modules')).length).toBeGreaterThan(20)

    // The image's environment and command, on Node 24 (the dev install's, as the image's base is node:24). Only
    // what a container has: no variable of this shell, and no dev dependency within reach.
    const env = Object.assign({}, ...of(image, 'ENV').map((instruction) => envOf(instruction.args))) as Record<string, string>
    expect(env).toMatchObject({ NODE_ENV: 'production', HOST: '0.0.0.0', PORT: '3000', DATA_DIR: '/data' })
    // The young generation's bound of `npm start` (docs/decisions.md), given to node through the environment.
    const startScript = (JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { scripts: { start: string } }).scripts.start
    expect(startScript.split(' ')).toContain(env.NODE_OPTIONS)
    expect(env.NODE_OPTIONS).toMatch(/^--max-semi-space-size=\d+$/)
    // And its compile cache (scripts/compile-cache.mjs), in a folder the image's user can write.
    expect(env.NODE_COMPILE_CACHE).toMatch(/^\/tmp\//)
    const compileCache = join(tempDataDir(), 'compile-cache')
    const [command] = of(image, 'CMD').map((cmd) => JSON.parse(cmd.args) as string[])
    expect(command).toEqual(['node', 'src/cli.ts', 'serve'])
    expect(process.versions.node.split('.')[0]).toBe('24')
    const server = startProcess(process.execPath, command.slice(1), {
      cwd: app,
      env: { ...env, PATH: '/usr/bin:/bin', HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDataDir(), NODE_COMPILE_CACHE: compileCache },
    })
    try {
      const [, url] = await server.waitFor(/listening on (http:\/\/\S+)/)
      const [, key] = await server.waitFor(/curl -H "X-API-Key: (\S+)"/)
      const ready = await call(`${url}/health/ready`)
      expect(ready.status).toBe(200)
      expect(ready.body).toEqual({ status: 'ready', checks: { store: 'ok', worker: 'ok', shutting_down: false } })
      expect(readdirSync(compileCache, { recursive: true }).length).toBeGreaterThan(50)
      expect((await call(`${url}/v2/data-structures`, { key })).status).toBe(200)
      expect((await call(`${url}/docs/static/swagger-ui-bundle.js`)).status).toBe(200)
      expect((await call(`${url}/metrics`)).text).toMatch(/^commission_api_build_info\{version="[^"]+",store="sqlite"\} 1$/m)
    } finally {
      expect(await server.stop()).toBe(0)
    }
  }, 300_000)
})
