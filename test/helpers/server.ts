import { Writable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { request as httpRequest } from 'undici'
import { buildApp } from '../../src/app.ts'
import { ManualClock } from '../../src/clock.ts'
import { type Config, loadConfig } from '../../src/config.ts'
import { loadFixture } from '../../src/fixtures/load-fixture.ts'
import type { Store } from '../../src/store/port.ts'
import { openTestStore } from './test-store.ts'

export interface TestServer {
  /** Where it listens; with `transport: 'inject'`, nothing listens and this is only the origin requests name. */
  url: string
  store: Store
  clock: ManualClock
  /** Every log line the server wrote, parsed. */
  logs: Record<string, unknown>[]
  /** Raw log output, to search for secrets. */
  rawLogs(): string
  /** Creates a company from a fixture; returns its id and first key. */
  load(fixture: unknown): Promise<{ companyId: string; apiKey: string }>
  call(path: string, options?: CallOptions): Promise<Reply>
  close(): Promise<void>
}

export interface CallOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH'
  key?: string
  headers?: Record<string, string>
  /** An object is sent as JSON; a string as is. */
  body?: unknown
}

export interface Reply {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: any
  text: string
}

/**
 * A clock that runs with real time, shifted by `advance` and `set`: for tests where the service's clock must
 * agree with its `Date` headers (incremental syncs) or rate-limit windows must end by themselves (429 storms).
 */
export class RunningClock extends ManualClock {
  #offsetMs = 0

  override now(): Date {
    return new Date(Date.now() + this.#offsetMs)
  }

  override advance(milliseconds: number): void {
    this.#offsetMs += milliseconds
  }

  override set(time: Date | string): void {
    this.#offsetMs = new Date(time).getTime() - Date.now()
  }
}

export interface TestServerOptions {
  /** A clock that follows real time instead of a manual one. */
  runningClock?: boolean
  /**
   * `socket` (the default) listens on an ephemeral port and calls go through undici: for the tests that prove
   * HTTP behaviour. `inject` opens no socket and calls go through Fastify's inject: for tests of what a route
   * answers, which need no real connection.
   */
  transport?: 'socket' | 'inject'
}

/**
 * Starts the real application on an ephemeral port (or, with `transport: 'inject'`, without one), on a fresh
 * in-memory store and a manual clock (or, with `runningClock`, a clock that follows real time).
 */
export async function startTestServer(
  env: Record<string, string> = {},
  configOverrides: Partial<Config> = {},
  { runningClock = false, transport = 'socket' }: TestServerOptions = {},
): Promise<TestServer> {
  const config = { ...loadConfig({ LOG_LEVEL: 'info', DEMO: 'off', ...env }), ...configOverrides }
  // In-memory SQLite; a database of its own on MONGODB_URL when that is set (see test-store.ts).
  const { store, dispose } = await openTestStore()
  const clock = runningClock ? new RunningClock() : new ManualClock('2026-06-01T00:00:00.000Z')
  let raw = ''
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      raw += chunk.toString()
      done()
    },
  })
  const app = await buildApp({ config, store, clock, logStream })
  let url = INJECTED_ORIGIN
  if (transport === 'socket') {
    await app.listen({ port: 0, host: '127.0.0.1' })
    const address = app.server.address()
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  }

  return {
    url,
    store,
    clock,
    get logs() {
      return raw
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>)
    },
    rawLogs: () => raw,
    async load(fixture) {
      const loaded = await loadFixture(store, clock, fixture)
      return { companyId: loaded.company_id, apiKey: loaded.api_keys[0] }
    },
    call: (path, options = {}) => (transport === 'socket' ? call(url + path, options) : injectCall(app, path, options)),
    async close() {
      await app.close()
      await dispose()
    },
  }
}

/** The origin Fastify's inject gives its requests (`Host: localhost:80`). */
const INJECTED_ORIGIN = 'http://localhost:80'

/** One HTTP request with undici; the body is parsed when it is JSON. */
export async function call(url: string, options: CallOptions = {}): Promise<Reply> {
  const { method, headers, payload } = requestOf(options)
  const response = await httpRequest(url, { method, headers, body: payload })
  return replyOf(response.statusCode, response.headers, await response.body.text())
}

/** The same request through Fastify's inject, without a socket. */
async function injectCall(app: FastifyInstance, path: string, options: CallOptions): Promise<Reply> {
  const { method, headers: sent, payload } = requestOf(options)
  const response = await app.inject({ method, url: path, headers: sent, payload })
  // Inject's headers may be numbers (content-length); undici's are always text.
  const headers = Object.fromEntries(
    Object.entries(response.headers).map(([name, value]) => [name, typeof value === 'number' ? String(value) : value]),
  )
  return replyOf(response.statusCode, headers, response.body)
}

function requestOf({ method = 'GET', key, headers = {}, body }: CallOptions) {
  const allHeaders: Record<string, string> = { ...headers }
  if (key !== undefined) allHeaders['x-api-key'] = key
  let payload: string | undefined
  if (body !== undefined) {
    payload = typeof body === 'string' ? body : JSON.stringify(body)
    allHeaders['content-type'] ??= 'application/json'
  }
  return { method, headers: allHeaders, payload }
}

/** A reply whose body is parsed when it is JSON. */
function replyOf(status: number, headers: Reply['headers'], text: string): Reply {
  const type = String(headers['content-type'] ?? '')
  return { status, headers, body: type.includes('json') && text !== '' ? JSON.parse(text) : text, text }
}
