import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { MIGRATIONS } from '../src/store/sqlite/migrations.ts'
import { runCli, startServerProcess, tempDataDir } from './helpers/process.ts'
import { call } from './helpers/server.ts'

/** What a newer version's migration leaves for this one to see: a schema version past the last it knows. */
function migrateAsANewerVersion(file: string): number {
  const db = new DatabaseSync(file)
  try {
    db.exec('PRAGMA busy_timeout = 10000')
    db.exec(`PRAGMA user_version = ${MIGRATIONS.length + 1}`)
    return MIGRATIONS.length + 1
  } finally {
    db.close()
  }
}

function importStatus(file: string, id: string): string {
  const db = new DatabaseSync(file, { readOnly: true })
  try {
    return (db.prepare('SELECT status FROM imports WHERE id = ?').get(id) as { status: string }).status
  } finally {
    db.close()
  }
}

const NEWER = new RegExp(
  `migrated by a newer version of commission-api \\(schema ${MIGRATIONS.length + 1}; this version knows ${MIGRATIONS.length}\\)`,
)

describe('a store a newer version has migrated (SQLite)', () => {
  it('is refused when it is opened, and left as it is', () => {
    const dataDir = tempDataDir()
    const file = join(dataDir, 'commission-api.sqlite')
    expect(runCli(['demo', '--users', '5', '--months', '1', '--deals', '5'], { DATA_DIR: dataDir }).code).toBe(0)
    migrateAsANewerVersion(file)
    const bytes = readFileSync(file)

    const result = runCli(['companies'], { DATA_DIR: dataDir })
    expect(result.code).not.toBe(0)
    expect(result.stderr).toMatch(NEWER)
    expect(readFileSync(file).equals(bytes)).toBe(true)
  })

  it('under a running instance: its writes answer 503 and write nothing, its imports wait for the new version, and it is not ready', async () => {
    const dataDir = tempDataDir()
    const file = join(dataDir, 'commission-api.sqlite')
    const server = startServerProcess({ DATA_DIR: dataDir, IMPORT_POLL_MS: '50' })
    try {
      const [, url] = await server.waitFor(/listening on (http:\/\/\S+)/)
      const [, key] = await server.waitFor(/curl -H "X-API-Key: (\S+)"/)
      const record = { id: 'D-UPGRADE-1', name: 'Upgrade', amount: 100, amount_currency: 'EUR' }
      const sent = await call(`${url}/v1/tables/deals/records/bulk?debounce=1`, { method: 'POST', key, body: [record] })
      expect(sent.status).toBe(200)
      expect((await call(`${url}/health/ready`)).status).toBe(200)

      migrateAsANewerVersion(file)

      const refused = await call(`${url}/v1/tables/deals/records/bulk`, { method: 'POST', key, body: [{ ...record, id: 'D-UPGRADE-2' }] })
      expect(refused.status).toBe(503)
      expect(refused.body).toEqual({ message: expect.stringMatching(/older version than the store/), type: 'ServiceUnavailableError' })
      const ready = await call(`${url}/health/ready`)
      expect(ready.status).toBe(503)
      expect(ready.body.checks.store).toBe('upgraded')

      // The worker claims nothing: the import waits, unrefused, for a worker of the new version.
      await server.waitFor(/a newer version migrated the store/)
      await sleep(1500)
      expect(importStatus(file, sent.body.import_id)).toBe('scheduled')
      expect(server.output().match(/a newer version migrated the store/g)).toHaveLength(1)
      expect(server.output()).not.toMatch(/import failed/)
    } finally {
      await server.stop()
    }
  })
})
