import { rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { smallFixture } from './helpers/fixtures.ts'
import { until } from './helpers/kit-server.ts'
import { type ServerProcess, startServerProcess } from './helpers/process.ts'
import { call } from './helpers/server.ts'
import { fillLeaving, mountSmallDisk, SMALL_DISKS, SMALL_DISKS_NOTE, unmount } from './helpers/small-disk.ts'

const ADMIN_TOKEN = 'disk-full-test-admin-token'
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

/** A real server on a small disk (a tmpfs), filled up while it works: what it acknowledged stays, and it recovers. */
describe.skipIf(!SMALL_DISKS)(`a server whose disk fills up${SMALL_DISKS_NOTE}`, () => {
  let disk: string
  let server: ServerProcess
  let url: string
  let key: string

  beforeAll(async () => {
    disk = mountSmallDisk('24m')
    server = startServerProcess({
      DATA_DIR: disk,
      DEMO: 'off',
      ADMIN_TOKEN,
      LOG_LEVEL: 'warn',
      IMPORT_POLL_MS: '50',
      // An import left to its lease when the disk was full runs again this soon.
      IMPORT_LEASE_MS: '1000',
    })
    ;[, url] = await server.waitFor(/listening on (http:\/\/\S+)/)
    const loaded = await call(`${url}/admin/companies`, { method: 'POST', headers: admin, body: smallFixture('FullDisk') })
    if (loaded.status !== 201) throw new Error(`the fixture did not load: ${loaded.text}`)
    key = loaded.body.api_key
  })

  afterAll(async () => {
    await server?.stop()
    if (disk) unmount(disk)
  })

  it('keeps an upsert answered 200 whose import finds the disk full, and applies it once there is room; meanwhile reads are served and writes refused with 503', async () => {
    const records = Array.from({ length: 2000 }, (_, index) => ({ deal_id: `F-${index}`, deal_name: `${'x'.repeat(400)} ${index}` }))
    const accepted = await call(`${url}/v1/tables/deals/records/bulk?debounce=1`, { method: 'POST', key, body: records })
    expect(accepted.status, accepted.text).toBe(200)
    const importId = accepted.body.import_id as string
    // Its payload is stored; the room left cannot hold its records once the debounce window closes.
    const filler = fillLeaving(disk, 64 * 1024)
    const postponed = "import postponed: the store's disk is full"
    await until(
      async () => server.output(),
      (output) => output.includes(postponed),
      15_000,
    )
    expect(server.output()).toContain(postponed)

    // Not refused: still waiting, never finished with an error.
    const waiting = await call(`${url}/v1/imports/${importId}`, { key })
    expect(waiting.status).toBe(200)
    expect(waiting.body.data_import.status).not.toBe('finished')
    // Reads are served: the rate limit counts in the instance alone when its file cannot be written.
    expect((await call(`${url}/v1/users?limit=1`, { key })).status).toBe(200)
    expect((await call(`${url}/v2/data-structures`, { key })).status).toBe(200)
    // A write that needs room the disk no longer has (SQLite reuses its log's room for small ones) is refused, with
    // nothing of it stored, as one to send again later.
    const rest = fillLeaving(disk, 0, 'rest')
    const large = records.map((record) => ({ ...record, deal_id: `L-${record.deal_id}` }))
    const refused = await call(`${url}/v1/tables/deals/records/bulk`, {
      method: 'POST',
      key,
      body: [...large, ...large.map((record) => ({ ...record, deal_id: `M-${record.deal_id}` }))],
    })
    expect(refused.status, refused.text).toBe(503)
    expect(refused.headers['retry-after']).toBe('30')
    expect(refused.body).toEqual({ message: expect.stringContaining('disk is full'), type: 'ServiceUnavailableError' })

    rmSync(rest)
    rmSync(filler)
    const finished = (
      await until(
        () => call(`${url}/v1/imports/${importId}`, { key }),
        (reply) => reply.body.data_import.status === 'finished',
        15_000,
      )
    ).body.data_import
    expect(finished).toMatchObject({ status: 'finished', error: false })
    const table = await call(`${url}/v1/tables/deals/records?limit=0`, { key })
    // The fixture's two deals and the 2,000 of the call; none of the refused one.
    expect(table.body.count).toBe(2002)
  })
})
