import { spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join, resolve } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, expect, it } from 'vitest'
import { childEnvironment } from './helpers/test-store.ts'
import { CLI, runCli, startServerProcess, tempDataDir } from './helpers/process.ts'

/** The store of these tests is the SQLite file, whatever MONGODB_URL the run has. */
const sqlite = (env: Record<string, string>) => ({ MONGODB_URL: '', PORT: '0', ...env })

/**
 * The one line a failed start writes on stderr, with exit code 1 and never a stack; otherwise a description
 * of what came instead, which no test's pattern matches.
 */
function failureLine(result: { code: number | null; stderr: string }): string {
  const lines = result.stderr.trim().split('\n')
  if (result.code === 1 && lines.length === 1 && lines[0].startsWith('commission-api: ')) return lines[0]
  console.error(result.stderr)
  return `not one line: exit code ${result.code}, ${lines.length} lines on stderr`
}

describe('start-up failures are one line naming the cause', () => {
  it('a port in use', async () => {
    const holder = createServer()
    await new Promise<void>((done) => holder.listen(0, '127.0.0.1', done))
    const port = (holder.address() as { port: number }).port
    try {
      expect(failureLine(runCli(['serve'], sqlite({ DATA_DIR: tempDataDir(), PORT: String(port) })))).toMatch(
        new RegExp(`127\\.0\\.0\\.1:${port}: the port is in use .*set PORT`),
      )
      // The worker's health listener names its own port and variable.
      const worker = runCli(['serve', '--role', 'worker'], sqlite({ DATA_DIR: tempDataDir(), WORKER_HEALTH_PORT: String(port) }))
      expect(failureLine(worker)).toMatch(new RegExp(`127\\.0\\.0\\.1:${port}: the port is in use .*set WORKER_HEALTH_PORT`))
      // Also where PORT, which the worker does not listen on, holds the same number (docker-compose.yml sets both).
      const same = runCli(
        ['serve', '--role', 'worker'],
        sqlite({ DATA_DIR: tempDataDir(), PORT: String(port), WORKER_HEALTH_PORT: String(port) }),
      )
      expect(failureLine(same)).toMatch(new RegExp(`127\\.0\\.0\\.1:${port}: the port is in use .*set WORKER_HEALTH_PORT`))
    } finally {
      holder.close()
    }
  })

  it('a HOST that does not resolve, or is not an address of this machine', () => {
    expect(failureLine(runCli(['serve'], sqlite({ DATA_DIR: tempDataDir(), HOST: 'no-such-host.invalid' })))).toMatch(
      /HOST=no-such-host\.invalid does not resolve/,
    )
    expect(failureLine(runCli(['serve'], sqlite({ DATA_DIR: tempDataDir(), HOST: '192.0.2.1' })))).toMatch(
      /HOST=192\.0\.2\.1 is not an address of this machine/,
    )
    // A link-local IPv6 address without its interface: refused as such by Linux, as absent where IPv6 is off.
    expect(failureLine(runCli(['serve'], sqlite({ DATA_DIR: tempDataDir(), HOST: 'fe80::1' })))).toMatch(
      /HOST=fe80::1 is not an address (to listen on|of this machine)/,
    )
  })

  it('a DATA_DIR that is a file', () => {
    const file = join(tempDataDir(), 'a-file')
    writeFileSync(file, 'not a directory')
    expect(failureLine(runCli(['serve'], sqlite({ DATA_DIR: file })))).toMatch(
      new RegExp(`DATA_DIR=${file}: a file stands where the directory should be`),
    )
    expect(failureLine(runCli(['companies'], sqlite({ DATA_DIR: join(file, 'below') })))).toMatch(/a file stands where DATA_DIR/)
  })

  // Node's recursive mkdir spins there for ever, where procfs answers ENOENT.
  it('a DATA_DIR under a directory that takes no new entries (procfs)', () => {
    expect(failureLine(runCli(['serve'], sqlite({ DATA_DIR: '/proc/commission-api/data' })))).toMatch(
      /DATA_DIR=\/proc\/commission-api\/data: a directory cannot be made there/,
    )
  })

  it('a DATA_DIR whose path is too long, not told as one that is not writable', () => {
    const dataDir = join(tempDataDir(), 'd'.repeat(300))
    expect(failureLine(runCli(['serve'], sqlite({ DATA_DIR: dataDir })))).toBe(
      `commission-api: cannot use DATA_DIR=${dataDir}: its path is too long for the file system`,
    )
  })

  it('a DATA_DIR that is not writable', () => {
    const parent = tempDataDir()
    chmodSync(parent, 0o555)
    const env = childEnvironment(process.env, sqlite({ DATA_DIR: join(parent, 'data') }))
    // root may write anywhere: the server is then run as nobody, as a container would run it.
    const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {}
    const result = spawnSync(process.execPath, [CLI, 'serve'], { env, encoding: 'utf8', timeout: 60_000, ...asNobody })
    expect(failureLine({ code: result.status, stderr: result.stderr })).toMatch(new RegExp(`DATA_DIR=${parent}/data: it is not writable`))
  })

  it('a store whose files are not writable, its log left beside it (by a crash, or a stop in a directory it could not write)', () => {
    const dataDir = tempDataDir()
    expect(runCli(['demo', '--users', '5', '--months', '1', '--deals', '5'], sqlite({ DATA_DIR: dataDir })).code).toBe(0)
    // Both files' logs and their indexes stay while a connection holds each open.
    const holders = ['commission-api.sqlite', 'commission-api.rate-limits.sqlite'].map((name) => {
      const db = new DatabaseSync(join(dataDir, name))
      db.exec('PRAGMA journal_mode = WAL')
      db.prepare('SELECT 1 FROM sqlite_master').all()
      return db
    })
    try {
      for (const name of readdirSync(dataDir)) chmodSync(join(dataDir, name), 0o444)
      chmodSync(dataDir, 0o555)
      const env = childEnvironment(process.env, sqlite({ DATA_DIR: dataDir }))
      // SQLite opens such a store read-only without a word: the server started, ready, and answered every v1 and v2
      // request 500 (its rate limit writes), its worker logging a failure at each poll.
      const asNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {}
      const result = spawnSync(process.execPath, [CLI, 'serve'], { env, encoding: 'utf8', timeout: 15_000, ...asNobody })
      expect(failureLine({ code: result.status, stderr: result.stderr })).toMatch(
        /cannot open the SQLite store .*commission-api\.sqlite: DATA_DIR is not writable/,
      )
    } finally {
      chmodSync(dataDir, 0o755)
      for (const holder of holders) holder.close()
    }
  })

  it('a directory where the SQLite file should be', () => {
    const dataDir = tempDataDir()
    mkdirSync(join(dataDir, 'commission-api.sqlite'))
    expect(failureLine(runCli(['serve'], sqlite({ DATA_DIR: dataDir })))).toMatch(
      /commission-api\.sqlite: a directory stands where the file should be$/,
    )
  })

  it('a corrupt SQLite file', () => {
    const dataDir = tempDataDir()
    writeFileSync(join(dataDir, 'commission-api.sqlite'), Buffer.alloc(8192, 0x5a))
    expect(failureLine(runCli(['serve'], sqlite({ DATA_DIR: dataDir })))).toMatch(
      /commission-api\.sqlite: the file is not a SQLite database/,
    )
  })

  it("a corrupt file of the rate limit's counters, named as such rather than as the store's file", () => {
    const dataDir = tempDataDir()
    expect(runCli(['demo', '--users', '5', '--months', '1', '--deals', '5'], sqlite({ DATA_DIR: dataDir })).code).toBe(0)
    writeFileSync(join(dataDir, 'commission-api.rate-limits.sqlite'), Buffer.alloc(8192, 0x5a))
    expect(failureLine(runCli(['serve'], sqlite({ DATA_DIR: dataDir })))).toBe(
      `commission-api: cannot open the rate limit's counters ${join(dataDir, 'commission-api.rate-limits.sqlite')}: the file is not a SQLite database (corrupt, or another kind of file): move it away or point DATA_DIR elsewhere`,
    )
  })

  it("another application's SQLite file, left untouched", () => {
    const dataDir = tempDataDir()
    const file = join(dataDir, 'commission-api.sqlite')
    const foreign = new DatabaseSync(file)
    foreign.exec('CREATE TABLE invoices (id INTEGER PRIMARY KEY); INSERT INTO invoices VALUES (1)')
    foreign.close()
    const bytes = readFileSync(file)
    expect(failureLine(runCli(['companies'], sqlite({ DATA_DIR: dataDir })))).toMatch(/another application's SQLite database/)
    // Not a byte written: not even WAL mode in its header.
    expect(readFileSync(file).equals(bytes)).toBe(true)
    const after = new DatabaseSync(file)
    expect(after.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all()).toEqual([{ name: 'invoices' }])
    after.close()
  })

  it('a MONGODB_URL the driver cannot read, named without its credentials', () => {
    const result = runCli(['serve'], { DATA_DIR: tempDataDir(), PORT: '0', MONGODB_URL: 'mongodb://ann:s3cret@db.example:99999/shop' })
    expect(failureLine(result)).toMatch(/MONGODB_URL is not usable/)
    expect(result.stderr).not.toContain('s3cret')
  })

  it('an unreachable MONGODB_URL, named without its credentials', () => {
    const result = runCli(['serve'], {
      DATA_DIR: tempDataDir(),
      PORT: '0',
      MONGODB_URL: 'mongodb://ann:s3cret@127.0.0.1:1/shop?serverSelectionTimeoutMS=500',
    })
    expect(failureLine(result)).toMatch(/cannot reach MongoDB 127\.0\.0\.1:1, database shop \(MONGODB_URL\)/)
    expect(result.stderr).not.toContain('s3cret')
  })
})

describe('the store in use is printed', () => {
  it('by the server, with the SQLite file as an absolute path', async () => {
    const dataDir = tempDataDir()
    const server = startServerProcess(sqlite({ DATA_DIR: dataDir, DEMO: 'off' }))
    try {
      const [, file] = await server.waitFor(/Store: SQLite file (\S+)/)
      expect(file).toBe(resolve(dataDir, 'commission-api.sqlite'))
    } finally {
      await server.stop()
    }
  })

  it('by the CLI, on stderr so that stdout stays the answer', () => {
    const dataDir = tempDataDir()
    const result = runCli(['demo', '--users', '5', '--months', '1', '--deals', '5', '--json'], sqlite({ DATA_DIR: dataDir }))
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toEqual({ company_id: expect.any(String), api_key: expect.any(String) })
    expect(result.stderr.trim()).toBe(`Store: SQLite file ${resolve(dataDir, 'commission-api.sqlite')}`)
  })
})

/** A Node.js older than 24 on this machine (its own `node`, not the one npm scripts use), if there is one. */
function olderNode(): string | null {
  for (const candidate of ['/usr/bin/node', '/usr/local/bin/node', '/bin/node']) {
    const version = spawnSync(candidate, ['--version'], { encoding: 'utf8' })
    if (version.status === 0 && Number(version.stdout.trim().slice(1).split('.')[0]) < 24) return candidate
  }
  return null
}

const oldNode = olderNode()
const repository = resolve(import.meta.dirname, '..')

describe.skipIf(!oldNode)('an older Node.js (skipped when the machine has no Node.js older than 24)', () => {
  const scripts = JSON.parse(readFileSync(join(repository, 'package.json'), 'utf8')).scripts as Record<string, string>

  it('every npm script that runs TypeScript checks the version first', () => {
    const running = Object.entries(scripts).filter(([, command]) => /\.ts\b/.test(command) || command.includes('vitest run'))
    expect(running.length).toBeGreaterThan(3)
    for (const [name, command] of running) expect(command, name).toMatch(/node (--import )?\.?\/?scripts\/require-node-24\.mjs/)
  })

  it('says that Node.js 24 is needed and how to get it, instead of ERR_UNKNOWN_FILE_EXTENSION', () => {
    for (const name of ['start', 'cli', 'test']) {
      // The script's own command, run by the older Node instead of the node the npm script would find.
      const command = scripts[name].split(' && ')[0].replace(/^node /, `${oldNode} `)
      const result = spawnSync('sh', ['-c', command], {
        cwd: repository,
        encoding: 'utf8',
        env: { ...process.env, DATA_DIR: tempDataDir() },
      })
      expect(result.status, name).toBe(1)
      expect(result.stderr, name).toContain('commission-api needs Node.js 24')
      expect(result.stderr, name).toContain('npm install')
      expect(result.stderr, name).not.toContain('ERR_UNKNOWN_FILE_EXTENSION')
    }
  })
})
