import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { CommissionClient, ConnectionError, type DataStructure, type Row } from 'commission-api/client'
import { parse } from 'csv-parse/sync'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { writeDurably } from '../src/durable-files.ts'
import { demoFixture } from '../src/fixtures/demo.ts'
import { terminalProgress } from '../src/sync/progress.ts'
import { commitMerge } from '../src/sync/row-files.ts'
import { lockDirectory, readState } from '../src/sync/state.ts'
import { syncStructures } from '../src/sync/sync.ts'
import { collect, requestLines } from './helpers/client-support.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { startCuttingProxy } from './helpers/cutting-proxy.ts'
import { runCliAsync, spawnCli, tempDataDir } from './helpers/process.ts'
import { fillLeaving, mountSmallDisk, SMALL_DISKS, SMALL_DISKS_NOTE, unmount } from './helpers/small-disk.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'

const ADMIN_TOKEN = 'admin-token-for-the-sync-tests'
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

const readNdjson = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line))

describe('sync: export every live structure, then only what changed', () => {
  let server: TestServer
  let client: CommissionClient
  let companyId: string
  let apiKey: string
  let structures: DataStructure[]
  const byType = (type: DataStructure['type']) => structures.find((structure) => structure.type === type)!
  /** Every row each live structure serves now, by structure id. */
  const served = async (): Promise<Record<string, Row[]>> =>
    Object.fromEntries(await Promise.all(structures.map(async (structure) => [structure.id, await collect(client.rows(structure))])))

  beforeAll(async () => {
    server = await startTestServer({ ADMIN_TOKEN }, {}, { runningClock: true })
    // Loaded an hour ago: the rows changed later are the ones the tests change.
    server.clock.advance(-3_600_000)
    ;({ companyId, apiKey } = await server.load(demoFixture({ users: 6, months: 3, deals: 20, seed: 'sync' })))
    server.clock.set(new Date())
    client = new CommissionClient({ baseUrl: server.url, apiKey })
    structures = (await client.listDataStructures()).data
  })
  afterAll(async () => {
    await client.close()
    await server.close()
  })

  it('writes one NDJSON file per structure with exactly the rows served, then merges the changed rows in place', async () => {
    const out = tempDataDir()
    const first = await syncStructures(client, { outDir: out, limit: 7 })
    expect(first.map((outcome) => outcome.id).toSorted()).toEqual(structures.map((structure) => structure.id).toSorted())
    const rows = await served()
    for (const outcome of first) {
      expect(outcome).toMatchObject({ kind: 'full', resumed: false, file: `${outcome.id}.ndjson` })
      expect(readNdjson(join(out, outcome.file))).toEqual(rows[outcome.id])
      expect(outcome.rows).toBe(rows[outcome.id].length)
    }
    // The lock stays: the operating system's lock on it ends with the run.
    expect(readdirSync(out).toSorted()).toEqual([...first.map((outcome) => outcome.file), 'sync-state.json', 'sync.lock.db'].toSorted())

    const fileIds = () => first.map((outcome) => statSync(join(out, outcome.file)).ino)
    const idsBefore = fileIds()
    const unchanged = await syncStructures(client, { outDir: out })
    expect(unchanged.map((outcome) => [outcome.kind, outcome.fetched, outcome.rows])).toEqual(
      first.map((outcome) => ['incremental', 0, outcome.rows]),
    )
    // Nothing read, nothing written: each file is the one the first run wrote, not a copy renamed over it.
    expect(fileIds()).toEqual(idsBefore)

    const statements = byType('statement_reporting')
    const edited = rows[statements.id][3]['standard.id']
    expect(
      (await server.call(`/admin/companies/${companyId}/statements/${edited}`, { method: 'PATCH', headers: admin, body: { payment: 777 } }))
        .status,
    ).toBe(200)
    const quota = byType('quota')
    const value = rows[quota.id][1]['standard.id']
    expect(
      (await server.call(`/admin/companies/${companyId}/quota-values/${value}`, { method: 'PATCH', headers: admin, body: { value: 12.5 } }))
        .status,
    ).toBe(200)

    const before = requestLines(server).length
    const third = await syncStructures(client, { outDir: out })
    const reads = requestLines(server)
      .slice(before)
      .map((line) => String(line.req.url))
      .filter((url) => /\/(statements|records|values)\b/.test(url))
    const statementRun = third.find((outcome) => outcome.id === statements.id)!
    expect(statementRun).toMatchObject({ kind: 'incremental', fetched: 1, rows: rows[statements.id].length })
    expect(third.find((outcome) => outcome.id === quota.id)).toMatchObject({ kind: 'incremental', fetched: 1 })
    const now = await served()
    for (const structure of structures) expect(readNdjson(join(out, `${structure.id}.ndjson`))).toEqual(now[structure.id])
    // The incremental reads asked for the rows modified after the stored mark.
    expect(reads).toHaveLength(structures.length)
    for (const url of reads) expect(url).toContain('last_modified_after=')
  })

  it('a first run with --since writes only the rows changed since then, and says so', async () => {
    const since = server.clock.now().toISOString()
    server.clock.advance(1_000)
    const statements = byType('statement_reporting')
    const edited = (await served())[statements.id][2]['standard.id']
    expect(
      (await server.call(`/admin/companies/${companyId}/statements/${edited}`, { method: 'PATCH', headers: admin, body: { payment: 778 } }))
        .status,
    ).toBe(200)

    const out = tempDataDir()
    const outcomes = await syncStructures(client, { outDir: out, since })
    for (const outcome of outcomes) expect(outcome).toMatchObject({ kind: 'incremental', since })
    const statementRun = outcomes.find((outcome) => outcome.id === statements.id)!
    expect(statementRun).toMatchObject({ fetched: 1, rows: 1 })
    expect(readNdjson(join(out, statementRun.file)).map((row) => row['standard.id'])).toEqual([edited])
  })

  it('writes CSV with one column per field and per property of an object field, merged by standard.id', async () => {
    const out = tempDataDir()
    const statements = byType('statement_reporting')
    await syncStructures(client, { outDir: out, format: 'csv' })
    const rows = (await served())[statements.id]
    const table = parse(readFileSync(join(out, `${statements.id}.csv`), 'utf8')) as string[][]
    const [header, ...records] = table
    expect(header).toEqual(
      expect.arrayContaining([
        'standard.id',
        'standard.user.id',
        'standard.user.email',
        'standard.total_commission.value',
        'standard.total_commission.currency',
      ]),
    )
    expect(records.map((record) => record[header.indexOf('standard.id')])).toEqual(rows.map((row) => row['standard.id']))
    const edited = rows[5]['standard.id']
    await server.call(`/admin/companies/${companyId}/statements/${edited}`, { method: 'PATCH', headers: admin, body: { payment: 31415 } })
    const [run] = (await syncStructures(client, { outDir: out, format: 'csv' })).filter((outcome) => outcome.id === statements.id)
    // The edit, and maybe rows changed within the clock-skew margin before the last run, read again.
    expect(run).toMatchObject({ kind: 'incremental', rows: rows.length })
    expect(run.fetched).toBeGreaterThanOrEqual(1)
    const merged = parse(readFileSync(join(out, `${statements.id}.csv`), 'utf8')) as string[][]
    expect(merged.length).toBe(table.length)
    expect(merged.map((record) => record[header.indexOf('standard.id')])).toEqual(
      table.map((record) => record[header.indexOf('standard.id')]),
    )
    expect(merged[6][header.indexOf('standard.total_commission.value')]).toBe('31415')
    expect(merged[6][header.indexOf('standard.id')]).toBe(edited)
  })

  it.skipIf(!SMALL_DISKS)(
    `on a disk that fills up, fails and leaves every file whole; a run with room again completes${SMALL_DISKS_NOTE}`,
    async () => {
      const disk = mountSmallDisk()
      try {
        const out = join(disk, 'out')
        await syncStructures(client, { outDir: out, format: 'csv' })
        const statements = byType('statement_reporting')
        const file = join(out, `${statements.id}.csv`)
        const before = readFileSync(file, 'utf8')
        const rows = (await served())[statements.id]
        await server.call(`/admin/companies/${companyId}/statements/${rows[2]['standard.id']}`, {
          method: 'PATCH',
          headers: admin,
          body: { payment: 4242 },
        })
        // Room for the run's partial file and state, and for part of the statements' file only: one write(2) of
        // it writes what fits and reports no error; the next one fails.
        fillLeaving(disk, 3 * statfsSync(disk).bsize + Math.floor(before.length / 2))

        await expect(syncStructures(client, { outDir: out, format: 'csv' })).rejects.toMatchObject({ code: 'ENOSPC' })
        expect(readFileSync(file, 'utf8')).toBe(before)
        // The part of the new file that fitted is not left behind, holding the room.
        expect(readdirSync(out).filter((name) => name.endsWith('.tmp'))).toEqual([])

        rmSync(join(disk, 'filler'))
        await syncStructures(client, { outDir: out, format: 'csv' })
        const merged = parse(readFileSync(file, 'utf8')) as string[][]
        expect(merged.length - 1).toBe(rows.length)
        expect(merged[3][merged[0].indexOf('standard.total_commission.value')]).toBe('4242')
      } finally {
        unmount(disk)
      }
    },
  )

  it('resumes an interrupted run after its last saved page, without reading the saved pages again', async () => {
    const out = tempDataDir()
    const proxy = await startCuttingProxy(server.url)
    const flaky = new CommissionClient({ baseUrl: proxy.url, apiKey, retry: { attempts: 0 } })
    const statements = byType('statement_reporting')
    try {
      const page = await client.getStatements(statements.id, { limit: 4 })
      // Cut in the middle of the third page of statements.
      proxy.cutAfter(JSON.stringify(page).length * 2.5, /\/statements\?/)
      const stopped = await syncStructures(flaky, { outDir: out, limit: 4 }).catch((error: unknown) => error)
      expect(stopped).toBeInstanceOf(ConnectionError)
      const interrupted = readState(out)!.structures[statements.id].run!
      expect(interrupted).toMatchObject({ mode: 'replace', walked: false })
      expect(interrupted.rows).toBeGreaterThan(0)
      expect(interrupted.start_id).toMatch(/^[0-9a-f]{24}$/)
      // What a killed run might have written after its checkpoint is cut off on resume.
      appendFileSync(join(out, `${statements.id}.partial.ndjson`), '{"standard.id":"torn')

      const before = requestLines(server).length
      const resumed = await syncStructures(flaky, { outDir: out, limit: 4 })
      expect(resumed.find((outcome) => outcome.id === statements.id)).toMatchObject({ kind: 'full', resumed: true })
      const firstRead = requestLines(server)
        .slice(before)
        .map((line) => String(line.req.url))
        .find((url) => url.includes('/statements'))
      expect(firstRead).toContain(`start_id=${interrupted.start_id}`)
      const rows = await served()
      for (const structure of structures) expect(readNdjson(join(out, `${structure.id}.ndjson`))).toEqual(rows[structure.id])
      expect(existsSync(join(out, `${statements.id}.partial.ndjson`))).toBe(false)
    } finally {
      await flaky.close()
      await proxy.close()
    }
  })

  it('the CLI exports with no output but its summary off a terminal, and paces itself to 40 requests a second', async () => {
    const out = tempDataDir()
    const before = requestLines(server).length
    const result = await runCliAsync(['sync', '--base-url', server.url, '--key', apiKey, '--out', out, '--page-size', '1'])
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).toBe('')
    expect(result.stdout.trim().split('\n')).toHaveLength(structures.length)
    expect(result.stdout).toContain(`${byType('quota').id}.ndjson`)
    const lines = requestLines(server).slice(before)
    // One row a page: well over a second's worth of requests, none refused, never more than 40 in a second.
    expect(lines.length).toBeGreaterThan(50)
    expect(lines.filter((line) => line.res.statusCode !== 200)).toEqual([])
    const times = lines.map((line) => Number(line.time))
    const busiestSecond = Math.max(...times.map((start) => times.filter((time) => time >= start && time < start + 1000).length))
    expect(busiestSecond).toBeLessThanOrEqual(41)
    const rows = await served()
    for (const structure of structures) expect(readNdjson(join(out, `${structure.id}.ndjson`))).toEqual(rows[structure.id])
  })

  it('a killed CLI run resumes where it stopped', async () => {
    const out = tempDataDir()
    const child = spawnCli(['sync', '--base-url', server.url, '--key', apiKey, '--out', out, '--page-size', '2', '--rate', '20'])
    // Kill it once it has saved a few pages of some structure.
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 25))
      const state = existsSync(join(out, 'sync-state.json')) ? readState(out) : null
      if (state && Object.values(state.structures).some((entry) => (entry.run?.rows ?? 0) >= 4)) break
      if (child.exitCode !== null) throw new Error('the sync ended before it could be killed')
    }
    child.kill('SIGKILL')
    await new Promise((resolve) => child.once('exit', resolve))
    expect(existsSync(join(out, 'sync.lock.db'))).toBe(true)

    const result = await runCliAsync(['sync', '--base-url', server.url, '--key', apiKey, '--out', out, '--json'])
    expect(result.code, result.stderr).toBe(0)
    expect(JSON.parse(result.stdout).some((outcome: any) => outcome.resumed)).toBe(true)
    const rows = await served()
    for (const structure of structures) expect(readNdjson(join(out, `${structure.id}.ndjson`))).toEqual(rows[structure.id])
  })

  it('refuses a directory that holds the sync of another service, and bad options with exit code 2', async () => {
    const out = tempDataDir()
    await syncStructures(client, { outDir: out })
    const other = new CommissionClient({ baseUrl: server.url.replace('127.0.0.1', 'localhost'), apiKey })
    await expect(syncStructures(other, { outDir: out })).rejects.toThrow(/holds a sync of/)
    await other.close()
    const usage = await runCliAsync(['sync', '--base-url', server.url, '--key', apiKey, '--out', out, '--since', '2026-01-01T00:00:00'])
    expect(usage.code).toBe(2)
    expect(usage.stderr).toContain('offset')
    for (const [option, value] of [
      ['--page-size', '0'],
      ['--page-size', '2001'],
      ['--rate', '0'],
    ]) {
      const refused = await runCliAsync(['sync', '--base-url', server.url, '--key', apiKey, '--out', tempDataDir(), option, value])
      expect(refused.code, `${option} ${value}`).toBe(2)
      expect(refused.stderr).toContain(`${option} expects a whole number from`)
    }
  })

  it('names --out, not a setting of the server, when the directory cannot be used', async () => {
    const file = join(tempDataDir(), 'a-file')
    writeFileSync(file, 'not a directory')
    const refused = await runCliAsync(['sync', '--base-url', server.url, '--key', apiKey, '--out', file])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(new RegExp(`^commission-api: cannot write to --out ${file}: E(EXIST|NOTDIR)`))
    expect(refused.stderr).not.toContain('DATA_DIR')
  })

  it("keeps a directory to its format: another is refused, and none given is the directory's own", async () => {
    const out = tempDataDir()
    await syncStructures(client, { outDir: out, format: 'csv' })
    await expect(syncStructures(client, { outDir: out, format: 'ndjson' })).rejects.toThrow(
      /holds a csv sync: run it with --format csv, or use another directory for ndjson/,
    )
    const again = await syncStructures(client, { outDir: out })
    expect(again.every((outcome) => outcome.file.endsWith('.csv') && outcome.kind === 'incremental')).toBe(true)
  })
})

describe('sync of a value holding U+2028 and U+2029, which JSON leaves unescaped', () => {
  const value = 'line\u2028separator, paragraph\u2029separator'

  it.each(['ndjson', 'csv'] as const)('%s: a full run, then incremental ones, keep the value in one row', async (format) => {
    const server = await startTestServer({}, {}, { runningClock: true })
    const fixture = smallFixture()
    fixture.data_tables![0].records![0].deal_name = value
    const { apiKey } = await server.load(fixture)
    const client = new CommissionClient({ baseUrl: server.url, apiKey })
    try {
      const structure = (await client.listDataStructures()).data.find((item) => item.name === 'Deal commissions')!
      const outDir = tempDataDir()
      const file = join(outDir, `${structure.id}.${format}`)
      const names = () => {
        if (format === 'ndjson') return readNdjson(file).map((line) => line['datatable.deal_name'])
        const [header, ...records] = parse(readFileSync(file, 'utf8')) as string[][]
        return records.map((record) => record[header.indexOf('datatable.deal_name')])
      }
      for (const kind of ['full', 'incremental', 'incremental']) {
        const outcome = (await syncStructures(client, { outDir, format })).find((item) => item.id === structure.id)
        expect(outcome).toMatchObject({ kind, rows: 2 })
        expect(names()).toEqual([value, 'Second deal'])
      }
    } finally {
      await client.close()
      await server.close()
    }
  })
})

const row = (id: string, value: number) => ({ 'standard.id': id, 'standard.value': { value, currency: 'EUR' } })
/** A row of about 120 KB in UTF-8, which spans reads of 64 KiB, holding U+2028. */
const longRow = (id: string) => ({ 'standard.id': id, 'datatable.note': `${id}\u2028`.repeat(30_000) })

describe.skipIf(!SMALL_DISKS)(`a file written durably on a disk that fills up${SMALL_DISKS_NOTE}`, () => {
  it('fails, rather than leaving the part that fitted as if it were the whole (the sync state, the demo key)', () => {
    const disk = mountSmallDisk()
    try {
      const { bsize } = statfsSync(disk)
      fillLeaving(disk, bsize)
      expect(() => writeDurably(join(disk, 'state.json'), 'x'.repeat(3 * bsize))).toThrow(expect.objectContaining({ code: 'ENOSPC' }))
      expect(existsSync(join(disk, 'state.json'))).toBe(false)
    } finally {
      unmount(disk)
    }
  })
})

/** A process holding the lock of `dir` until it is killed. */
async function holdLock(dir: string) {
  const state = join(import.meta.dirname, '../src/sync/state.ts')
  const script = `import { lockDirectory } from ${JSON.stringify(state)}; globalThis.release = lockDirectory(${JSON.stringify(dir)}); console.log('locked'); setInterval(() => {}, 1000)`
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  const [line] = (await once(child.stdout, 'data')) as [Buffer]
  expect(line.toString()).toContain('locked')
  return child
}

describe("the sync directory's lock", () => {
  it('refuses a directory another run holds, and takes it once that run is killed, whatever process id it had', async () => {
    const dir = tempDataDir()
    const holder = await holdLock(dir)
    expect(() => lockDirectory(dir)).toThrow(new RegExp(`another sync is writing to ${dir}`))
    holder.kill('SIGKILL')
    await once(holder, 'exit')
    const release = lockDirectory(dir)
    expect(() => lockDirectory(dir)).toThrow(/another sync is writing/)
    release()
    lockDirectory(dir)()
  })

  it("takes over an earlier version's lock, a process id in a text file, even this process's own (a container's is the same every run)", () => {
    for (const pid of [process.pid, 1]) {
      const dir = tempDataDir()
      writeFileSync(join(dir, 'sync.lock'), String(pid))
      const release = lockDirectory(dir)
      expect(existsSync(join(dir, 'sync.lock'))).toBe(false)
      expect(() => lockDirectory(dir)).toThrow(/another sync is writing/)
      release()
    }
  })

  it("releases its lock when the earlier version's lock file cannot be removed", () => {
    const dir = tempDataDir()
    mkdirSync(join(dir, 'sync.lock'))
    expect(() => lockDirectory(dir)).toThrow(/EISDIR|EPERM/)
    // The failed run holds nothing: the next one meets the same file, not a lock.
    expect(() => lockDirectory(dir)).toThrow(/EISDIR|EPERM/)
    rmSync(join(dir, 'sync.lock'), { recursive: true })
    lockDirectory(dir)()
  })

  it('holds its lock while the run lasts, whatever the garbage collector does', async () => {
    const dir = tempDataDir()
    const state = join(import.meta.dirname, '../src/sync/state.ts')
    // The release is dropped at once: only the module keeps the lock's connection.
    const script = `import { lockDirectory } from ${JSON.stringify(state)}; lockDirectory(${JSON.stringify(dir)}); globalThis.gc(); globalThis.gc(); console.log('locked'); setInterval(() => {}, 1000)`
    const holder = spawn(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    try {
      const [line] = (await once(holder.stdout, 'data')) as [Buffer]
      expect(line.toString()).toContain('locked')
      expect(() => lockDirectory(dir)).toThrow(/another sync is writing/)
    } finally {
      holder.kill('SIGKILL')
      await once(holder, 'exit')
    }
  })
})

describe('sync against a service answering what it should not', () => {
  it('writes nothing outside its directory for a structure id that is not an ObjectId', async () => {
    const root = tempDataDir()
    const out = join(root, 'a', 'out')
    const structure = { id: '../escaped', name: 'Quota', type: 'quota', environment: 'live', total_records: 1 }
    const service = createServer((request, response) => {
      response.setHeader('content-type', 'application/json')
      response.end(JSON.stringify(request.url?.startsWith('/v2/data-structures') ? { data: [structure] } : { data: [], meta: {} }))
    })
    await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve))
    const { port } = service.address() as AddressInfo
    const client = new CommissionClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'cak_a-key-for-a-service-that-lies' })
    try {
      await expect(syncStructures(client, { outDir: out })).rejects.toThrow(
        /answered a structure id that is not an ObjectId \("\.\.\/escaped"\)/,
      )
      expect(readdirSync(join(root, 'a'))).toEqual(['out'])
      expect(readdirSync(out).filter((name) => name !== 'sync.lock.db')).toEqual([])
    } finally {
      await client.close()
      service.close()
    }
  })

  it('tells a base URL that is not the service, rather than fail on its answer', async () => {
    // An application answering every path with a page, then one answering JSON of another shape.
    const answers = [
      { type: 'text/html', body: '<html>Welcome</html>', told: /answered 200 with a body that is not JSON \("<html>Welcome<\/html>"\)/ },
      {
        type: 'application/json',
        body: '{"data":5}',
        told: /answered 200 with JSON \{"data":5\}, where the service answers a JSON object with a data array/,
      },
    ]
    for (const answer of answers) {
      const service = createServer((_request, response) => {
        response.setHeader('content-type', answer.type)
        response.end(answer.body)
      })
      await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve))
      const { port } = service.address() as AddressInfo
      try {
        const result = await runCliAsync([
          'sync',
          '--base-url',
          `http://127.0.0.1:${port}`,
          '--key',
          'cak_a-key-for-something-else',
          '--out',
          tempDataDir(),
        ])
        expect(result.code, result.stderr).toBe(1)
        expect(result.stderr).toMatch(answer.told)
        expect(result.stderr).toMatch(/is the base URL the service's\?/)
        expect(result.stderr).not.toMatch(/TypeError|\n\s+at /)
      } finally {
        service.close()
      }
    }
  })
})

describe('sync files', () => {
  it('a merge replaces changed rows in place and appends new ones, in NDJSON and CSV', async () => {
    const dir = tempDataDir()
    writeFileSync(join(dir, 'changes.ndjson'), [row('b', 20), row('d', 4)].map((item) => JSON.stringify(item)).join('\n') + '\n')
    writeFileSync(join(dir, 'rows.ndjson'), [row('a', 1), row('b', 2), row('c', 3)].map((item) => JSON.stringify(item)).join('\n') + '\n')
    expect(await commitMerge(join(dir, 'changes.ndjson'), join(dir, 'rows.ndjson'), 'ndjson', [])).toBe(4)
    expect(readNdjson(join(dir, 'rows.ndjson'))).toEqual([row('a', 1), row('b', 20), row('c', 3), row('d', 4)])

    const columns = ['standard.id', 'standard.value.value', 'standard.value.currency']
    writeFileSync(join(dir, 'rows.csv'), 'standard.id,standard.value.value,standard.value.currency\na,1,EUR\nb,2,"E,UR"\nc,3,EUR\n')
    expect(await commitMerge(join(dir, 'changes.ndjson'), join(dir, 'rows.csv'), 'csv', columns)).toBe(4)
    expect(readFileSync(join(dir, 'rows.csv'), 'utf8')).toBe(
      'standard.id,standard.value.value,standard.value.currency\na,1,EUR\nb,20,EUR\nc,3,EUR\nd,4,EUR\n',
    )
  })

  it('reads NDJSON rows longer than a read of the file, holding U+2028, each as one line', async () => {
    const dir = tempDataDir()
    writeFileSync(join(dir, 'changes.ndjson'), `${JSON.stringify(longRow('b'))}\n`)
    writeFileSync(join(dir, 'rows.ndjson'), [longRow('a'), row('b', 2), longRow('c')].map((item) => JSON.stringify(item)).join('\n') + '\n')
    expect(await commitMerge(join(dir, 'changes.ndjson'), join(dir, 'rows.ndjson'), 'ndjson', [])).toBe(3)
    expect(readNdjson(join(dir, 'rows.ndjson'))).toEqual([longRow('a'), longRow('b'), longRow('c')])
  })

  it('reads NDJSON lines ended with CRLF, as a file edited on Windows has them, blank ones skipped', async () => {
    const dir = tempDataDir()
    writeFileSync(join(dir, 'changes.ndjson'), `${JSON.stringify(row('b', 20))}\r\n\r\n`)
    writeFileSync(join(dir, 'rows.ndjson'), [row('a', 1), row('b', 2)].map((item) => `${JSON.stringify(item)}\r\n`).join('') + '\r\n')
    expect(await commitMerge(join(dir, 'changes.ndjson'), join(dir, 'rows.ndjson'), 'ndjson', [])).toBe(2)
    expect(readNdjson(join(dir, 'rows.ndjson'))).toEqual([row('a', 1), row('b', 20)])
  })

  it('shows a progress bar on a terminal, and nothing elsewhere', () => {
    let written = ''
    const terminal = Object.assign(
      new Writable({
        write(chunk, _encoding, done) {
          written += chunk.toString()
          done()
        },
      }),
      { isTTY: true, columns: 100, cursorTo: () => true, clearLine: () => true, moveCursor: () => true },
    ) as unknown as NodeJS.WriteStream
    const progress = terminalProgress(terminal)!
    progress.start(
      { id: 'x', name: 'Commission statements', type: 'statement_reporting', total_records: 10, links: { fields: '', records: '' } },
      10,
      0,
    )
    progress.advance(10)
    progress.finish()
    expect(written).toContain('Commission statements')
    expect(written).toContain('10/10 rows')
    expect(terminalProgress(Object.assign(new Writable(), { isTTY: false }) as unknown as NodeJS.WriteStream)).toBeUndefined()
  })
})
