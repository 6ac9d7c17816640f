// A connector's test suite against the stand-in: the example of docs/testing.md ("Using it in your tests"), run by npm test.
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { request } from 'undici'
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest'

// What `npm start -- --test-mode` prints, always the same.
const ADMIN = { authorization: 'Bearer commission-api-test-mode-admin-token' }
const KEY = { 'x-api-key': 'cak_test-mode-demo-key-0000000000000' }

let service: ChildProcess
let baseUrl = ''
let company = ''

async function send(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const response = await request(baseUrl + path, {
    method: method as 'GET',
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await response.body.text()
  return { status: response.statusCode, headers: response.headers, body: text ? JSON.parse(text) : null }
}
const api = (method: string, path: string, body?: unknown) => send(method, path, KEY, body)
const admin = (method: string, path: string, body?: unknown) => send(method, path, ADMIN, body)

beforeAll(async () => {
  // The stand-in, from a checkout of commission-api, on a free port; it needs no other configuration.
  const checkout = process.env.COMMISSION_API_DIR
  if (!checkout) throw new Error('Set COMMISSION_API_DIR to a checkout of commission-api, with npm install run in it')
  service = spawn('npm', ['start', '--', '--test-mode'], { cwd: checkout, env: { PATH: process.env.PATH, PORT: '0' }, detached: true })
  baseUrl = await new Promise<string>((resolve, reject) => {
    let output = ''
    let errors = ''
    service.stdout!.on('data', (chunk) => {
      output += chunk
      const url = /listening on (http\S+)/.exec(output)?.[1]
      if (url) resolve(url)
    })
    service.stderr!.on('data', (chunk) => (errors += chunk))
    // A stand-in that cannot start says why on its stderr: show it rather than wait for the hook's timeout.
    service.once('exit', (code) => reject(new Error(`The stand-in exited (${code}) before it listened:\n${errors}`)))
    service.once('error', (error) => reject(new Error(`The stand-in could not be started in ${checkout}: ${error.message}`)))
  })
  company = (await admin('GET', '/admin/companies')).body.data[0].id
}, 60_000)

afterAll(async () => {
  // Nothing to stop when it never started, or has exited already.
  if (service?.pid === undefined || service.exitCode !== null || service.signalCode !== null) return
  process.kill(-service.pid!, 'SIGTERM')
  await once(service, 'exit')
})

// Every test starts from the demo company as it was created, with no fault and an empty journal.
beforeEach(async () => {
  await admin('POST', '/admin/reset')
})

it('applies a debounced upsert once the clock has passed its window', async () => {
  const upsert = await api('PUT', '/v1/users/bulk?debounce=300', { data: [{ email: 'new.rep@demo.example', name: 'New Rep' }] })
  expect((await api('GET', `/v1/imports/${upsert.body.import_id}`)).body.data_import.status).toBe('scheduled')

  // Five minutes pass at once; the drain answers once no import of the company is left to apply.
  await admin('POST', '/admin/clock', { advance_ms: 300_000 })
  await admin('POST', `/admin/companies/${company}/imports/drain`)
  const applied = (await api('GET', `/v1/imports/${upsert.body.import_id}`)).body.data_import
  expect(applied).toMatchObject({ status: 'finished', error: false })
  expect(Date.parse(applied.finished_at) - Date.parse(applied.created_at)).toBeGreaterThanOrEqual(300_000)
  const users = (await api('GET', '/v1/users')).body.data
  expect(users.map((user: { email: string }) => user.email)).toContain('new.rep@demo.example')
})

it('waits out an injected 429 for Retry-After, then reads', async () => {
  await admin('POST', `/admin/companies/${company}/faults`, {
    method: 'GET',
    path: '/v2/data-structures',
    status: 429,
    times: 2,
    retry_after: 1,
  })

  // The connector's retry loop under test.
  let answer = await api('GET', '/v2/data-structures')
  while (answer.status === 429) {
    await sleep(Number(answer.headers['retry-after']) * 1000)
    answer = await api('GET', '/v2/data-structures')
  }
  expect(answer.status).toBe(200)

  // What it sent, newest first: two refused requests, then the one that went through.
  const sent = (await admin('GET', `/admin/companies/${company}/requests?path_prefix=/v2/`)).body.data
  expect(sent.map((entry: { status: number }) => entry.status)).toEqual([200, 429, 429])
})

it('sees a connection dropped mid-sync as the network failure it is', async () => {
  await admin('POST', `/admin/companies/${company}/faults`, { method: 'POST', path: '/v1/tables/deals/records/bulk', drop: true, times: 1 })
  await expect(api('POST', '/v1/tables/deals/records/bulk', [{ id: 'D-1', amount: 10 }])).rejects.toThrow('other side closed')
  // The service received the call but stored nothing: sending it again is safe.
  expect((await admin('GET', `/admin/companies/${company}/imports`)).body.count).toBe(0)
  expect((await api('POST', '/v1/tables/deals/records/bulk', [{ id: 'D-1', amount: 10 }])).status).toBe(200)
})
