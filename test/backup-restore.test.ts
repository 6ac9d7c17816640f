import { spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { setImmediate, setTimeout as sleep } from 'node:timers/promises'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { expect, it } from 'vitest'
import { call } from './helpers/server.ts'
import { runCli, runCliAsync, spawnCli, startServerProcess, tempDataDir } from './helpers/process.ts'

const KEY = 'cak_backup-and-restore-demo-key-0'

/** The `sh` commands of docs/operations.md's "Backing up the embedded store", the backup's and the restore's. */
function documentedCommands(): { backUp: string; restore: string } {
  const page = readFileSync(resolve(import.meta.dirname, '../docs/operations.md'), 'utf8')
  const section = page.slice(page.indexOf('## Backing up the embedded store'))
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? ''
  const [backUp, restore] = block.split('# Restore\n')
  return { backUp, restore: restore ?? '' }
}

function run(commands: string, env: Record<string, string>): void {
  const result = spawnSync('sh', ['-e', '-c', commands], { env: { ...process.env, ...env }, encoding: 'utf8' })
  expect(result.status, result.stderr).toBe(0)
}

function integrity(file: string): string {
  const db = new DatabaseSync(file, { readOnly: true })
  try {
    return (db.prepare('PRAGMA integrity_check').get() as { integrity_check: string }).integrity_check
  } finally {
    db.close()
  }
}

// The embedded store's own procedure: MongoDB is backed up with its tools.
it(
  'restores, as docs/operations.md says, the backup taken after a graceful stop, over the log a later crash left',
  { timeout: 120_000 },
  async () => {
    const dataDir = tempDataDir()
    const backup = tempDataDir()
    const env = { MONGODB_URL: '', DATA_DIR: dataDir }
    const { backUp, restore } = documentedCommands()

    const first = startServerProcess({ ...env, DEMO_API_KEY: KEY })
    const [, url] = await first.waitFor(/listening on (http:\/\/\S+)/)
    // Acknowledged before the backup, and still in its debounce window: waiting to run.
    const upsert = await call(`${url}/v1/tables/deals/records/bulk?debounce=3600`, {
      method: 'POST',
      key: KEY,
      body: [{ id: 'before-the-backup', name: 'Kept', amount: 5, amount_currency: 'EUR' }],
    })
    expect(upsert.status).toBe(200)
    expect(await first.stop()).toBe(0)
    run(backUp, { DATA_DIR: dataDir, BACKUP: backup })

    // Written after the backup by a server that then dies: its log stays beside the file.
    const second = startServerProcess({ ...env, DEMO: 'off' })
    await second.waitFor(/listening on/)
    expect(runCli(['demo', '--users', '5', '--months', '2', '--deals', '200'], env).code).toBe(0)
    await second.stop('SIGKILL')
    expect(existsSync(join(dataDir, 'commission-api.sqlite-wal'))).toBe(true)

    run(restore, { DATA_DIR: dataDir, BACKUP: backup })
    expect(integrity(join(dataDir, 'commission-api.sqlite'))).toBe('ok')
    const companies = JSON.parse(runCli(['companies', '--json'], env).stdout) as { id: string }[]
    expect(companies).toHaveLength(1)
    const drained = runCli(['imports', 'drain', '--company', companies[0].id, '--json'], env)
    expect(drained.code, drained.stderr).toBe(0)
    expect(JSON.parse(drained.stdout).data).toEqual([
      expect.objectContaining({ id: upsert.body.import_id, status: 'finished', error: false }),
    ])
  },
)

it(
  'backs up a running server with the backup command, while it writes, into a copy that restores as the docs say',
  { timeout: 120_000 },
  async () => {
    const dataDir = tempDataDir()
    const backup = tempDataDir()
    const env = { MONGODB_URL: '', DATA_DIR: dataDir }
    const server = startServerProcess({ ...env, DEMO_API_KEY: KEY })
    let acknowledged = ''
    try {
      const [, url] = await server.waitFor(/listening on (http:\/\/\S+)/)
      const send = (id: string) =>
        call(`${url}/v1/tables/deals/records/bulk?debounce=3600`, {
          method: 'POST',
          key: KEY,
          body: [{ id, name: id, amount: 5, amount_currency: 'EUR' }],
        })
      const before = await send('before-the-backup')
      expect(before.status).toBe(200)
      acknowledged = before.body.import_id
      // Writes go on while the copy is made.
      const copying = new AbortController()
      const writes = (async () => {
        // Paced under the rate limit of 80 requests a second.
        for (let round = 0; !copying.signal.aborted; round++) {
          expect((await send(`during-${round}`)).status).toBe(200)
          await sleep(25)
        }
      })()
      const file = join(backup, 'commission-api.sqlite')
      const made = await runCliAsync(['backup', file], env)
      copying.abort()
      await writes
      expect(made.code, made.stderr).toBe(0)
      expect(made.stdout).toContain(file)
      expect(integrity(file)).toBe('ok')
      expect((await runCliAsync(['backup', file], env)).stderr).toContain('it exists: a backup goes to a new file')
    } finally {
      expect(await server.stop()).toBe(0)
    }

    const restored = tempDataDir()
    run(documentedCommands().restore, { DATA_DIR: restored, BACKUP: backup })
    const restoredEnv = { ...env, DATA_DIR: restored }
    expect(integrity(join(restored, 'commission-api.sqlite'))).toBe('ok')
    const [company] = JSON.parse(runCli(['companies', '--json'], restoredEnv).stdout) as { id: string }[]
    const drained = runCli(['imports', 'drain', '--company', company.id, '--json'], restoredEnv)
    expect(drained.code, drained.stderr).toBe(0)
    // The call acknowledged before the backup began, waiting in its window then, is there and is applied.
    expect(JSON.parse(drained.stdout).data).toContainEqual(expect.objectContaining({ id: acknowledged, status: 'finished', error: false }))

    // Refused: no file named (a usage mistake), and a store in memory, which holds nothing another process could copy.
    expect(runCli(['backup'], restoredEnv).code).toBe(2)
    const inMemory = runCli(['backup', join(backup, 'memory.sqlite')], { ...env, DATA_DIR: ':memory:' })
    expect([inMemory.code, inMemory.stderr]).toEqual([1, expect.stringContaining('DATA_DIR: a store in memory')])
    expect(existsSync(join(backup, 'memory.sqlite'))).toBe(false)
  },
)

it(
  'leaves no file under its name when the backup command is killed midway, and the next backup takes the name',
  { timeout: 120_000 },
  async () => {
    const dataDir = tempDataDir()
    const backup = tempDataDir()
    const env = { MONGODB_URL: '', DATA_DIR: dataDir }
    // Large enough for the copy to take a moment (about 40 MB).
    expect(runCli(['demo', '--deals', '20000'], env).code).toBe(0)
    const file = join(backup, 'commission-api.sqlite')

    const cut = spawnCli(['backup', file], env)
    const exited = once(cut, 'exit')
    // Killed as soon as the copy has begun, its first file in the directory.
    while (readdirSync(backup).length === 0 && cut.exitCode === null) await setImmediate()
    cut.kill('SIGKILL')
    await exited
    expect(cut.signalCode).toBe('SIGKILL')
    // What a restore would have copied: a file cut short, or an empty one. The copy cut short keeps a name of its own.
    expect(existsSync(file)).toBe(false)
    expect(readdirSync(backup).every((name) => name.startsWith('commission-api.sqlite.partial-'))).toBe(true)

    const made = await runCliAsync(['backup', file], env)
    expect(made.code, made.stderr).toBe(0)
    expect(integrity(file)).toBe('ok')
    expect(readdirSync(backup).filter((name) => !name.includes('.partial-'))).toStrictEqual(['commission-api.sqlite'])
  },
)
