import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { TEST_MODE_DEFAULTS } from '../src/config.ts'
import { CLI, type ServerProcess, startProcess } from './helpers/process.ts'
import { call } from './helpers/server.ts'

/**
 * `serve --test-mode`: a stand-in for a connector's tests in one command: a controlled clock, an in-memory store,
 * a fixed admin token printed at start, and a deterministic demo key. Run in an empty directory, as a CI job would,
 * and without MONGODB_URL (whatever this run's store), since the test mode's store is its own memory.
 */
describe('serve --test-mode', () => {
  const directory = mkdtempSync(join(tmpdir(), 'commission-api-test-mode-'))
  const { MONGODB_URL: _mongo, DATA_DIR: _dataDir, ...parent } = process.env
  const started: ServerProcess[] = []
  const run = (args: string[]) =>
    spawnSync(process.execPath, [CLI, ...args], { env: parent, cwd: directory, encoding: 'utf8', timeout: 30_000 })
  const start = (env: Record<string, string> = {}) => {
    const server = startProcess(process.execPath, [CLI, 'serve', '--test-mode'], {
      env: { ...parent, PORT: '0', LOG_LEVEL: 'warn', ...env },
      cwd: directory,
    })
    started.push(server)
    return server
  }

  afterAll(async () => {
    for (const server of started) await server.stop()
    rmSync(directory, { recursive: true, force: true })
  })

  it('starts with a controlled clock, an in-memory store, the fixed admin token and the demo key, and prints them', async () => {
    const server = start()
    const [, url] = await server.waitFor(/listening on (http:\S+)/)
    await server.waitFor(/Test mode: admin token/)
    const banner = server.output()
    expect(banner).toContain('Store: SQLite in memory')
    expect(banner).toMatch(/Clock: controlled, now \d{4}-/)
    expect(banner).toContain(`Test mode: admin token ${TEST_MODE_DEFAULTS.ADMIN_TOKEN}`)
    expect(banner).toContain(TEST_MODE_DEFAULTS.DEMO_API_KEY)
    expect(banner).not.toContain('Warning')

    const admin = { authorization: `Bearer ${TEST_MODE_DEFAULTS.ADMIN_TOKEN}` }
    expect((await call(`${url}/admin/clock`, { headers: admin })).body.mode).toBe('controlled')
    const moved = await call(`${url}/admin/clock`, { method: 'POST', headers: admin, body: { advance_ms: 60_000 } })
    expect(moved.status).toBe(200)
    const users = await call(`${url}/v1/users?limit=0`, { key: TEST_MODE_DEFAULTS.DEMO_API_KEY })
    expect(users.status).toBe(200)
    expect(users.body.count).toBeGreaterThan(0)
    // Nothing is written to disk: no data directory, no key file.
    expect(readdirSync(directory)).toEqual([])
  })

  it('warns when it listens beyond this machine with the well-known admin token', async () => {
    const server = start({ HOST: '0.0.0.0' })
    await server.waitFor(/Warning: HOST=0\.0\.0\.0 serves this well-known admin token/)
    const mine = start({ HOST: '0.0.0.0', ADMIN_TOKEN: 'a-secret-admin-token-of-my-own' })
    await mine.waitFor(/listening on/)
    await mine.waitFor(/Clock: controlled/)
    expect(mine.output()).not.toContain('Warning')
  })

  it('gives the demo company the same key on every start', async () => {
    const server = start()
    const [, url] = await server.waitFor(/listening on (http:\S+)/)
    expect((await call(`${url}/v2/data-structures`, { key: TEST_MODE_DEFAULTS.DEMO_API_KEY })).status).toBe(200)
  })

  it('refuses a role that needs a store other processes open', () => {
    const refused = run(['serve', '--test-mode', '--role', 'api'])
    expect(refused.status).toBe(2)
    expect(refused.stderr).toContain('DATA_DIR=:memory: keeps the data in this one process')
    expect(run(['companies', '--test-mode']).status).toBe(2)
  })
})
