import { spawn, spawnSync } from 'node:child_process'
import { closeSync, openSync, readFileSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { smallFixture } from './helpers/fixtures.ts'
import { until } from './helpers/kit-server.ts'
import { CLI, type ServerProcess, startProcess, startServerProcess, tempDataDir } from './helpers/process.ts'
import { call } from './helpers/server.ts'
import { childEnvironment } from './helpers/test-store.ts'
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

/** `npm start > server.log` where that file's disk fills up (the store's own disk, say): the log cannot be written. */
describe.skipIf(!SMALL_DISKS)(`a server whose log file's disk fills up${SMALL_DISKS_NOTE}`, () => {
  it('keeps serving, and writes its log lines again once there is room', async () => {
    const disk = mountSmallDisk('1m')
    const logFile = join(disk, 'server.log')
    const out = openSync(logFile, 'a')
    const env = childEnvironment(process.env, { DATA_DIR: tempDataDir(), PORT: '0', LOG_LEVEL: 'info', DEMO: 'off' })
    const child = spawn(process.execPath, [CLI, 'serve'], { env, stdio: ['ignore', out, 'pipe'] })
    let stderr = ''
    child.stderr!.on('data', (chunk) => (stderr += chunk.toString()))
    try {
      const url = (
        await until(
          async () => readFileSync(logFile, 'utf8'),
          (text) => /listening on http:\/\/\S+/.test(text),
          15_000,
        )
      ).match(/listening on (http:\/\/\S+)/)![1]
      const filler = fillLeaving(disk, 0)
      // Each request writes its log line: before, the first one the disk refused (ENOSPC) ended the process.
      for (let index = 0; index < 20; index++) expect((await call(`${url}/health/live`)).status).toBe(200)
      expect(child.exitCode).toBeNull()

      rmSync(filler)
      expect((await call(`${url}/health/live`, { headers: { 'x-request-id': 'room-again' } })).status).toBe(200)
      // The lines the disk refused meanwhile were kept, and are written with it (a request's line follows its answer).
      const logged = await until(
        async () =>
          readFileSync(logFile, 'utf8')
            .split('\n')
            .filter((line) => line.includes('"url":"/health/live"')),
        (lines) => lines.length === 21,
        5000,
      )
      expect(logged).toHaveLength(21)
      expect(logged.at(-1)).toContain('"request_id":"room-again"')
      expect(stderr).toBe('')
    } finally {
      child.kill('SIGTERM')
      if (child.exitCode === null) await new Promise((done) => child.once('exit', done))
      closeSync(out)
      unmount(disk)
    }
  })
})

/**
 * A write the disk refuses with another error than "full" (a quota exceeded, EDQUOT, or a file size limit, EFBIG:
 * SQLite tells both as a disk I/O error, not SQLITE_FULL), here a file size limit set with prlimit.
 */
const PRLIMIT = spawnSync('prlimit', ['--version']).status === 0
describe.skipIf(!PRLIMIT)(`a server whose writes the disk refuses with an I/O error${PRLIMIT ? '' : ' (NOT RUN: no prlimit)'}`, () => {
  it('keeps an upsert answered 200 whose import meets it, never refused for it, and answers the writes it refuses 503', async () => {
    const dataDir = tempDataDir()
    const setUp = startServerProcess({ DATA_DIR: dataDir, DEMO: 'off', ADMIN_TOKEN })
    const [, setUpUrl] = await setUp.waitFor(/listening on (http:\/\/\S+)/)
    const loaded = await call(`${setUpUrl}/admin/companies`, { method: 'POST', headers: admin, body: smallFixture('IoError') })
    const key = loaded.body.api_key as string
    expect(await setUp.stop()).toBe(0)

    // Room for a call's payload in the log, not for the records its import then writes beside it.
    const records = Array.from({ length: 1000 }, (_, index) => ({ deal_id: `E-${index}`, deal_name: 'x'.repeat(1000) }))
    const limit = statSync(join(dataDir, 'commission-api.sqlite')).size + 1_600_000
    const env = childEnvironment(process.env, { DATA_DIR: dataDir, DEMO: 'off', PORT: '0', LOG_LEVEL: 'warn', IMPORT_LEASE_MS: '1000' })
    const server = startProcess('prlimit', [`--fsize=${limit}:unlimited`, process.execPath, CLI, 'serve'], { env })
    try {
      const [, url] = await server.waitFor(/listening on (http:\/\/\S+)/)
      const accepted = await call(`${url}/v1/tables/deals/records/bulk`, { method: 'POST', key, body: records })
      expect(accepted.status, accepted.text).toBe(200)
      await server.waitFor(/import postponed|import failed/)
      const waiting = await call(`${url}/v1/imports/${accepted.body.import_id}`, { key })
      expect(waiting.body.data_import.status).not.toBe('finished')
      expect(server.output()).not.toMatch(/import failed on an internal error/)

      const refused = await call(`${url}/v1/tables/deals/records/bulk`, { method: 'POST', key, body: [...records, ...records] })
      expect(refused.status, refused.text).toBe(503)
      expect(refused.body).toEqual({ message: expect.any(String), type: 'ServiceUnavailableError' })

      // The limit lifted (its soft part: raising a hard limit takes a capability a container may not have), the
      // import is applied, once.
      expect(spawnSync('prlimit', ['--pid', String(server.child.pid), '--fsize=unlimited:unlimited']).status).toBe(0)
      const finished = await until(
        () => call(`${url}/v1/imports/${accepted.body.import_id}`, { key }),
        (reply) => reply.body.data_import.status === 'finished',
        15_000,
      )
      expect(finished.body.data_import).toMatchObject({ status: 'finished', error: false })
      expect((await call(`${url}/v1/tables/deals/records?limit=0`, { key })).body.count).toBe(1002)
    } finally {
      await server.stop()
    }
  })

  it("serves the reads whose rate-limit counters' file the disk refuses, counting them in the instance alone", async () => {
    const dataDir = tempDataDir()
    const setUp = startServerProcess({ DATA_DIR: dataDir, DEMO: 'off', ADMIN_TOKEN })
    const [, setUpUrl] = await setUp.waitFor(/listening on (http:\/\/\S+)/)
    const loaded = await call(`${setUpUrl}/admin/companies`, { method: 'POST', headers: admin, body: smallFixture('IoCounters') })
    const key = loaded.body.api_key as string
    expect(await setUp.stop()).toBe(0)

    // Room for the stores' indexes (32 KiB each) and a few of the counters' commits in their log, not for more; a limit
    // of 20 a second writes every request's count.
    const env = childEnvironment(process.env, { DATA_DIR: dataDir, DEMO: 'off', PORT: '0', LOG_LEVEL: 'warn', RATE_LIMIT_PER_SECOND: '20' })
    const server = startProcess('prlimit', [`--fsize=${48 * 1024}`, process.execPath, CLI, 'serve'], { env })
    try {
      const [, url] = await server.waitFor(/listening on (http:\/\/\S+)/)
      const statuses = new Set<number>()
      for (let served = 0; served < 40;) {
        const read = await call(`${url}/v2/data-structures`, { key })
        statuses.add(read.status)
        if (read.status === 429) await new Promise((resolve) => setTimeout(resolve, 100))
        else if (read.status === 200) served++
        else throw new Error(`a read answered ${read.status}: ${read.text}`)
      }
      expect(statuses.has(200)).toBe(true)
    } finally {
      await server.stop()
    }
  })
})
