import { once } from 'node:events'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { openConnection, refusesConnections } from './helpers/raw-http.ts'
import { runCli, type ServerProcess, startServerProcess, tempDataDir } from './helpers/process.ts'
import { call } from './helpers/server.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { finishedImport } from './helpers/operations.ts'
import { TEST_MODE_DEFAULTS } from '../src/config.ts'

const ADMIN_TOKEN = 'shutdown-test-admin-token'
const FIXTURE = JSON.stringify({ company: { name: 'In flight', default_currency: 'EUR' }, users: [{ email: 'ann@in-flight.example' }] })

/** Starts a POST /admin/companies whose body is not sent yet; resolves once the server holds the request. */
async function holdRequestInFlight(port: number) {
  const connection = await openConnection(port)
  connection.socket.write(
    'POST /admin/companies HTTP/1.1\r\nHost: localhost\r\n' +
      `Authorization: Bearer ${ADMIN_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(FIXTURE)}\r\n` +
      'Expect: 100-continue\r\n\r\n',
  )
  // Node answers 100 Continue once it has the request's headers: from then on the request is in flight.
  await connection.waitFor('100 Continue')
  return connection
}

/** A request creating a company, whole, to pipeline. */
const creation = (name: string) => {
  const body = JSON.stringify({ company: { name, default_currency: 'EUR' }, users: [{ email: 'ann@pipelined.example' }] })
  return (
    'POST /admin/companies HTTP/1.1\r\nHost: localhost\r\n' +
    `Authorization: Bearer ${ADMIN_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  )
}

/** A connection kept alive after one answer, idle, as a load balancer keeps its pool. */
async function keptAliveConnection(port: number) {
  const connection = await openConnection(port)
  connection.socket.write('GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n')
  await connection.waitFor('{"status":"ok"}')
  return connection
}

async function started(env: Record<string, string>, args?: string[]): Promise<{ server: ServerProcess; port: number }> {
  const server = startServerProcess({ DEMO: 'off', ADMIN_TOKEN, ...env }, args)
  const [, url] = await server.waitFor(/listening on (http:\/\/\S+)/)
  return { server, port: Number(new URL(url).port) }
}

const exitCode = async (server: ServerProcess) =>
  server.child.exitCode !== null ? server.child.exitCode : (await once(server.child, 'exit'))[0]

/**
 * A store with a company whose recalculation is due (as after an upgrade), and another connection holding its write
 * lock: a server started on it listens, while its import worker's thread stays in its start, waiting to recalculate,
 * until `holder` rolls back.
 */
function storeWhoseRecalculationWaits(): { dataDir: string; holder: DatabaseSync } {
  const dataDir = tempDataDir()
  const loaded = runCli(['load', '-', '--json'], { DATA_DIR: dataDir }, JSON.stringify(smallFixture()))
  const { company_id: companyId } = JSON.parse(loaded.stdout) as { company_id: string }
  const holder = new DatabaseSync(join(dataDir, 'commission-api.sqlite'))
  holder.prepare('INSERT INTO recalculations_due (company_id, reason) VALUES (?, ?)').run(companyId, 'a test')
  holder.exec('BEGIN IMMEDIATE')
  return { dataDir, holder }
}

describe('graceful shutdown of a real server process', () => {
  it('on SIGTERM stops accepting, finishes the request in flight and closes its connection, closes the store and exits 0', async () => {
    const dataDir = tempDataDir()
    const { server, port } = await started({ DATA_DIR: dataDir, LOG_LEVEL: 'info' })
    const connection = await holdRequestInFlight(port)

    server.child.kill('SIGTERM')
    await refusesConnections(port)
    // The rest of the body: the request is answered, and its connection closed after the answer. (Before, the
    // connection stayed open, idle, and the stop waited for it until SHUTDOWN_TIMEOUT_MS ran out: exit code 1.)
    connection.socket.write(FIXTURE)
    await once(connection.socket, 'close')
    const [answer] = connection
      .received()
      .split(/(?=HTTP\/1\.1 )/)
      .filter((part) => !part.startsWith('HTTP/1.1 100'))
    expect(answer).toMatch(/^HTTP\/1\.1 201 /)
    expect(answer).toMatch(/\r\nconnection: close\r\n/i)
    expect(answer).toContain('"company_id"')
    expect(await exitCode(server)).toBe(0)
    expect(server.output()).toContain('"msg":"shut down"')

    // What the request in flight wrote was committed before the store closed.
    const companies = JSON.parse(runCli(['companies', '--json'], { DATA_DIR: dataDir }).stdout) as Array<{ name: string }>
    expect(companies.map((company) => company.name)).toEqual(['In flight'])
  })

  it('on SIGINT shuts down the same way', async () => {
    const { server, port } = await started({ DATA_DIR: tempDataDir() })
    expect((await call(`http://127.0.0.1:${port}/health/ready`)).status).toBe(200)
    server.child.kill('SIGINT')
    expect(await exitCode(server)).toBe(0)
  })

  it('ends on SIGTERM when stdout is a closed pipe, as with npm start | head', async () => {
    const { server, port } = await started({ DATA_DIR: tempDataDir(), LOG_LEVEL: 'info', SHUTDOWN_TIMEOUT_MS: '3000' })
    expect((await call(`http://127.0.0.1:${port}/health/ready`)).status).toBe(200)
    // The reader goes away: every later write to stdout (the shutdown's log lines) fails with EPIPE.
    server.child.stdout!.destroy()
    expect((await call(`http://127.0.0.1:${port}/health/live`)).status).toBe(200)
    server.child.kill('SIGTERM')
    // Before, the log destination retried the failed write forever and the process never exited; a kill after
    // three times the shutdown bound keeps this test from hanging in that case.
    const stuck = setTimeout(() => server.child.kill('SIGKILL'), 9_000)
    const code = await exitCode(server)
    clearTimeout(stuck)
    // 0: the graceful shutdown completed (it exits 1 when SHUTDOWN_TIMEOUT_MS runs out, null when killed).
    expect(code).toBe(0)
  })

  it('with SHUTDOWN_DRAIN_MS, refuses new connections, answers on the open ones and closes each after its answer, then stops', async () => {
    const { server, port } = await started({ DATA_DIR: tempDataDir(), LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: '8000' })
    // Kept-alive connections left idle, as a load balancer keeps its pool.
    const pooled = await Promise.all([keptAliveConnection(port), keptAliveConnection(port)])
    for (const connection of pooled) expect(connection.received()).toMatch(/\r\nconnection: keep-alive\r\n/i)

    server.child.kill('SIGTERM')
    await server.waitFor(/"drain_ms":8000,"msg":"shutting down"/)
    await refusesConnections(port)
    // The pooled connections were not closed under the balancer: a request sent on one now is answered, and
    // then the instance closes that connection itself.
    pooled[0].socket.write('GET /health/ready HTTP/1.1\r\nHost: localhost\r\n\r\n')
    await once(pooled[0].socket, 'close')
    const answers = pooled[0].received().split(/(?=HTTP\/1\.1 )/)
    expect(answers).toHaveLength(2)
    expect(answers[1]).toMatch(/^HTTP\/1\.1 503 /)
    expect(answers[1]).toMatch(/\r\nconnection: close\r\n/i)
    expect(JSON.parse(answers[1].slice(answers[1].indexOf('\r\n\r\n') + 4))).toMatchObject({ checks: { shutting_down: true } })
    // The other one stays open, idle, until its client (the balancer) closes it: then the drain is over.
    expect(pooled[1].socket.closed).toBe(false)
    expect(server.output()).not.toContain('drained')
    pooled[1].socket.end()

    expect(await exitCode(server)).toBe(0)
    expect(server.output()).toMatch(/"open_connections":0,"msg":"drained: every connection has ended"/)
  })

  it('with SHUTDOWN_DRAIN_MS, answers both of two writes pipelined on an open connection, the last closing it', async () => {
    const dataDir = tempDataDir()
    const { server, port } = await started({ DATA_DIR: dataDir, LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: '8000' })
    const pooled = await keptAliveConnection(port)
    server.child.kill('SIGTERM')
    await server.waitFor(/"msg":"shutting down"/)
    pooled.socket.write(creation('First') + creation('Second'))
    await once(pooled.socket, 'close')
    const answers = pooled.received().split(/(?=HTTP\/1\.1 )/)
    expect(answers).toHaveLength(3)
    expect(answers[1]).toMatch(/^HTTP\/1\.1 201 [\s\S]*\r\nconnection: keep-alive\r\n/i)
    expect(answers[2]).toMatch(/^HTTP\/1\.1 201 [\s\S]*\r\nconnection: close\r\n/i)
    expect(await exitCode(server)).toBe(0)
    const companies = JSON.parse(runCli(['companies', '--json'], { DATA_DIR: dataDir }).stdout) as Array<{ name: string }>
    expect(companies.map((company) => company.name).toSorted()).toEqual(['First', 'Second'])
  })

  it('answers a write pipelined behind a slow request when the stop begins between them, rather than running it unanswered', async () => {
    const { server, port } = await started({ LOG_LEVEL: 'info', DEMO: 'on' }, ['serve', '--test-mode'])
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
    const [demo] = (await call(`http://127.0.0.1:${port}/admin/companies`, { headers: admin })).body.data as Array<{ id: string }>
    const fault = { method: 'GET', path: '/v1/users', delay_ms: 1500 }
    expect(
      (await call(`http://127.0.0.1:${port}/admin/companies/${demo.id}/faults`, { method: 'POST', headers: admin, body: fault })).status,
    ).toBe(201)
    const key = TEST_MODE_DEFAULTS.DEMO_API_KEY
    const body = JSON.stringify({ data: [{ email: 'pipelined@demo.example' }] })
    const connection = await openConnection(port)
    // The write is read, and run, while the first request waits out its delay.
    connection.socket.write(
      `GET /v1/users?limit=1 HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${key}\r\n\r\n` +
        `PUT /v1/users/bulk HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    )
    // The write has run (its import exists) while the first request still waits: the stop begins between them.
    for (;;) {
      const imports = await call(`http://127.0.0.1:${port}/admin/companies/${demo.id}/imports`, { headers: admin })
      if (imports.body.count > 0) break
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(connection.received()).toBe('')
    server.child.kill('SIGTERM')
    await once(connection.socket, 'close')
    const answers = connection.received().split(/(?=HTTP\/1\.1 )/)
    // Both answered: the first did not close the connection in front of the second's answer.
    expect(answers).toHaveLength(2)
    expect(answers[0]).toMatch(/^HTTP\/1\.1 200 /)
    expect(answers[1]).toMatch(/^HTTP\/1\.1 200 [\s\S]*"import_id"/)
    expect(await exitCode(server)).toBe(0)
  })

  it('with SHUTDOWN_DRAIN_MS, closes the connections still idle once the drain time is over', async () => {
    const { server, port } = await started({ DATA_DIR: tempDataDir(), LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: '300' })
    const idle = await keptAliveConnection(port)
    server.child.kill('SIGTERM')
    await once(idle.socket, 'close')
    expect(await exitCode(server)).toBe(0)
    expect(server.output()).toMatch(/"open_connections":1,"msg":"drain time over"/)
  })

  it('closes a connection that has sent nothing (a balancer connecting ahead, a probe) rather than waiting for it', async () => {
    const { server, port } = await started({ DATA_DIR: tempDataDir(), LOG_LEVEL: 'info', SHUTDOWN_TIMEOUT_MS: '5000' })
    const silent = await openConnection(port)
    server.child.kill('SIGTERM')
    await once(silent.socket, 'close')
    expect(silent.received()).toBe('')
    expect(await exitCode(server)).toBe(0)
    expect(server.output()).not.toContain('shutdown took too long')
  })

  it('answers a request sent, in the first moments of the stop, on a connection that had sent nothing', async () => {
    const { server, port } = await started({ DATA_DIR: tempDataDir(), LOG_LEVEL: 'info', SHUTDOWN_TIMEOUT_MS: '5000' })
    const late = await openConnection(port)
    const closed = once(late.socket, 'close')
    server.child.kill('SIGTERM')
    await refusesConnections(port)
    // Its bytes come after the stop's first sweeps (a client slow to write what it connected for): they are read.
    await new Promise((resolve) => setTimeout(resolve, 250))
    late.socket.write('GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n')
    await closed
    expect(late.received()).toMatch(/^HTTP\/1\.1 200 [^]*\r\nconnection: close\r\n/i)
    expect(await exitCode(server)).toBe(0)
  })

  it('with SHUTDOWN_DRAIN_MS, closes a connection that has sent nothing once the drain time is over', async () => {
    const { server, port } = await started({
      DATA_DIR: tempDataDir(),
      LOG_LEVEL: 'info',
      SHUTDOWN_DRAIN_MS: '300',
      SHUTDOWN_TIMEOUT_MS: '5000',
    })
    const silent = await openConnection(port)
    server.child.kill('SIGTERM')
    await server.waitFor(/"open_connections":1,"msg":"drain time over"/)
    await once(silent.socket, 'close')
    expect(await exitCode(server)).toBe(0)
  })

  it('with SHUTDOWN_DRAIN_MS, still finishes a request in flight when the drain time is over, before the store closes', async () => {
    const dataDir = tempDataDir()
    const { server, port } = await started({ DATA_DIR: dataDir, LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: '300' })
    const connection = await holdRequestInFlight(port)
    server.child.kill('SIGTERM')
    await server.waitFor(/"open_connections":1,"msg":"drain time over"/)
    // The rest of the body once the drain is over: the instance is closing.
    connection.socket.write(FIXTURE)
    await connection.waitFor('"company_id"')
    expect(connection.received()).toMatch(/HTTP\/1\.1 201 /)
    expect(await exitCode(server)).toBe(0)
    const companies = JSON.parse(runCli(['companies', '--json'], { DATA_DIR: dataDir }).stdout) as Array<{ name: string }>
    expect(companies.map((company) => company.name)).toEqual(['In flight'])
  })

  it('sends a large answer ended before the stop whole, to a client that reads it slowly', async () => {
    const { server, port } = await started({ DATA_DIR: tempDataDir(), LOG_LEVEL: 'info' })
    const created = await call(`http://127.0.0.1:${port}/admin/companies`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: smallFixture('Large'),
    })
    const key = created.body.api_key as string
    const records = Array.from({ length: 2000 }, (_, index) => ({ deal_id: `L-${index}`, deal_name: `${'x'.repeat(8000)} ${index}` }))
    const upsert = await call(`http://127.0.0.1:${port}/v1/tables/deals/records/bulk`, { method: 'POST', key, body: records })
    await finishedImport(`http://127.0.0.1:${port}`, key, upsert.body.import_id)

    // A page of about 16 MB, read no further once its headers came: the answer has ended (it is sent whole), and most of
    // it waits in the server's buffers.
    const reader = await openConnection(port)
    reader.socket.write(`GET /v1/tables/deals/records?limit=2000 HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${key}\r\n\r\n`)
    await reader.waitFor('\r\n\r\n')
    reader.socket.pause()
    server.child.kill('SIGTERM')
    await server.waitFor(/"msg":"shutting down"/)
    await new Promise((resolve) => setTimeout(resolve, 300))
    reader.socket.resume()
    await once(reader.socket, 'close')

    const received = Buffer.from(reader.received(), 'latin1')
    const headerEnd = received.indexOf('\r\n\r\n')
    const length = Number(/\r\ncontent-length: (\d+)\r\n/i.exec(received.subarray(0, headerEnd).toString())?.[1])
    expect(length).toBeGreaterThan(16_000_000)
    expect(received.length - headerEnd - 4).toBe(length)
    expect(await exitCode(server)).toBe(0)
  })

  it('answers a request pipelined behind an answer that was being sent, kept alive, when the stop began', async () => {
    const { server, port } = await started({ DATA_DIR: tempDataDir(), LOG_LEVEL: 'info' })
    const created = await call(`http://127.0.0.1:${port}/admin/companies`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      body: smallFixture('Streamed'),
    })
    const key = created.body.api_key as string
    // Text that does not compress: the gzip answer is streamed for as long as the client does not read it.
    const records = Array.from({ length: 2000 }, (_, index) => ({ deal_id: `S-${index}`, deal_name: randomBytes(3000).toString('base64') }))
    const upsert = await call(`http://127.0.0.1:${port}/v1/tables/deals/records/bulk`, { method: 'POST', key, body: records })
    await finishedImport(`http://127.0.0.1:${port}`, key, upsert.body.import_id)

    // Read no further once its headers came (keep-alive, before the stop): the rest is still to be sent.
    const reader = await openConnection(port)
    reader.socket.write(
      `GET /v1/tables/deals/records?limit=2000 HTTP/1.1\r\nHost: localhost\r\nX-API-Key: ${key}\r\nAccept-Encoding: gzip\r\n\r\n`,
    )
    await reader.waitFor('\r\n\r\n')
    reader.socket.pause()
    expect(reader.received()).toMatch(/\r\nconnection: keep-alive\r\n/i)
    server.child.kill('SIGTERM')
    await server.waitFor(/"msg":"shutting down"/)
    // Pipelined once the stop has begun, behind the answer still being sent (its headers said keep-alive).
    reader.socket.write('GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n')
    await new Promise((resolve) => setTimeout(resolve, 200))
    reader.socket.resume()
    await once(reader.socket, 'close')
    // The second answer came, after the first, and closed the connection.
    expect(reader.received()).toMatch(/HTTP\/1\.1 200 [\s\S]*HTTP\/1\.1 200 [\s\S]*\r\nconnection: close\r\n[\s\S]*\{"status":"ok"\}$/i)
    expect(await exitCode(server)).toBe(0)
  })

  it('stops gracefully on SIGTERM while the import worker thread is still starting, its request in flight answered', async () => {
    // The listener opens before the worker's thread has started; after an upgrade the thread first runs the
    // recalculations due, here kept waiting by another connection's write lock, as a long write would.
    const { dataDir, holder } = storeWhoseRecalculationWaits()
    const server = startServerProcess({ DEMO: 'off', ADMIN_TOKEN, DATA_DIR: dataDir, LOG_LEVEL: 'info' })
    const [, url] = await server.waitFor(/"msg":"Server listening at (http:\/\/[^"]+)"/)
    const connection = await holdRequestInFlight(Number(new URL(url).port))

    const exited = once(server.child, 'exit')
    server.child.kill('SIGTERM')
    // Before, the signal killed the process at once (no exit code), its request in flight unanswered.
    await Promise.race([server.waitFor(/"msg":"shutting down"/), exited])
    holder.exec('ROLLBACK')
    holder.close()
    connection.socket.write(FIXTURE)
    if (!connection.socket.closed) await once(connection.socket, 'close')
    expect((await exited)[0]).toBe(0)
    expect(connection.received()).toMatch(/HTTP\/1\.1 201 /)
    expect(server.output()).toContain('"msg":"shut down"')
    expect(server.output()).not.toContain('commission-api listening on')
    const companies = JSON.parse(runCli(['companies', '--json'], { DATA_DIR: dataDir }).stdout) as Array<{ name: string }>
    expect(companies.map((company) => company.name)).toContain('In flight')
  })

  it('with SHUTDOWN_DRAIN_MS, leaves out the rest of the start when the stop came while it started, during the drain too', async () => {
    // The stop drains before it closes: the start going on meanwhile (here the import worker's thread, kept waiting
    // by another connection's write lock) must see the stop from its drain on, not only from its close.
    const { dataDir, holder } = storeWhoseRecalculationWaits()
    const server = startServerProcess({ DEMO: 'off', ADMIN_TOKEN, DATA_DIR: dataDir, LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: '8000' })
    const [, url] = await server.waitFor(/"msg":"Server listening at (http:\/\/[^"]+)"/)
    // Idle in a balancer's pool: the drain lasts until it is closed.
    const pooled = await keptAliveConnection(Number(new URL(url).port))

    server.child.kill('SIGTERM')
    await server.waitFor(/"drain_ms":8000,"msg":"shutting down"/)
    holder.exec('ROLLBACK')
    holder.close()
    // The thread has run the recalculation (or given up on it): it starts, and the rest of the start would follow.
    await server.waitFor(/"msg":"(company recalculated after the upgrade|a recalculation due after the upgrade failed)/)
    await sleep(500)
    pooled.socket.end()
    expect(await exitCode(server)).toBe(0)
    expect(server.output()).toContain('"msg":"shut down"')
    expect(server.output()).not.toContain('commission-api listening on')
  })

  it('with SHUTDOWN_DRAIN_MS, leaves out the companies left to render and the banner when the stop came while it rendered', async () => {
    // The last part of the start: statement rows an earlier version rendered, rendered again (here kept waiting by
    // another connection's write lock). A stop meanwhile must leave out what is left of it, and the banner.
    const dataDir = tempDataDir()
    const file = join(dataDir, 'commission-api.sqlite')
    for (let company = 0; company < 2; company++) runCli(['load', '-', '--json'], { DATA_DIR: dataDir }, JSON.stringify(smallFixture()))
    const holder = new DatabaseSync(file)
    holder.exec("UPDATE statements SET rendering_key = 'an earlier version'")
    holder.exec('BEGIN IMMEDIATE')
    const server = startServerProcess({ DEMO: 'off', ADMIN_TOKEN, DATA_DIR: dataDir, LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: '8000' })
    const [, url] = await server.waitFor(/"msg":"Server listening at (http:\/\/[^"]+)"/)
    const pooled = await keptAliveConnection(Number(new URL(url).port))
    // The worker's thread has started (its first claim found the lock held): the HTTP thread waits to render.
    await server.waitFor(/"msg":"import worker: the store is busy/)

    server.child.kill('SIGTERM')
    await server.waitFor(/"drain_ms":8000,"msg":"shutting down"/)
    holder.exec('ROLLBACK')
    holder.close()
    // The company it was rendering is rendered; the rest of the start would follow.
    await server.waitFor(/"msg":"statement rows rendered ahead of reads again"/)
    await sleep(500)
    pooled.socket.end()
    expect(await exitCode(server)).toBe(0)
    expect(server.output()).toContain('"msg":"shut down"')
    expect(server.output()).not.toContain('commission-api listening on')
    expect(server.output().match(/statement rows rendered ahead of reads again/g)).toHaveLength(1)
  })

  it('exits with 1 when the requests in flight outlast SHUTDOWN_TIMEOUT_MS', async () => {
    const { server, port } = await started({ DATA_DIR: tempDataDir(), SHUTDOWN_TIMEOUT_MS: '300' })
    const connection = await holdRequestInFlight(port)
    server.child.kill('SIGTERM')
    // The body never comes: only the bound ends the process.
    expect(await exitCode(server)).toBe(1)
    expect(server.output()).toContain('shutdown took too long')
    connection.socket.destroy()
  })
})
