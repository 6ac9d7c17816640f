import { Writable } from 'node:stream'
import { loadConfig } from '../../src/config.ts'
import { type RunningServer, startServer } from '../../src/server.ts'
import { type CallOptions, call, type Reply } from './server.ts'
import { tempDataDir } from './process.ts'
import { onMongo, runEnvironment } from './test-store.ts'

export const KIT_ADMIN_TOKEN = 'kit-test-admin-token-0123456789'
export const KIT_DEMO_KEY = 'cak_kit-test-demo-key-00000000000'

/** A server as `serve` starts it, with the test kit: a controlled clock, admin routes, the demo company. */
export interface KitServer {
  url: string
  running: RunningServer
  /** The demo company's id; its key is KIT_DEMO_KEY. */
  demoId: string
  /** What the server wrote at start (its banner). */
  banner(): string
  call(path: string, options?: CallOptions): Promise<Reply>
  /** A call with the admin token. */
  admin(path: string, options?: CallOptions): Promise<Reply>
  /** A call with the demo company's key. */
  api(path: string, options?: CallOptions): Promise<Reply>
  close(): Promise<void>
}

/**
 * Starts the real server (`startServer`, as `serve` does) with CLOCK=controlled, the admin routes and the demo
 * company, on an in-memory store (its worker inline). On a MongoDB run, the store is a database of its own.
 */
export async function startKitServer(env: Record<string, string> = {}): Promise<KitServer> {
  const config = loadConfig(
    runEnvironment({
      PORT: '0',
      LOG_LEVEL: 'warn',
      CLOCK: 'controlled',
      ADMIN_TOKEN: KIT_ADMIN_TOKEN,
      DEMO: 'on',
      DEMO_API_KEY: KIT_DEMO_KEY,
      IMPORT_POLL_MS: '50',
      DATA_DIR: onMongo ? tempDataDir() : ':memory:',
      ...env,
    }),
  )
  let banner = ''
  const out = new Writable({
    write(chunk, _encoding, done) {
      banner += chunk.toString()
      done()
    },
  })
  const logs = new Writable({ write: (_chunk, _encoding, done) => done() })
  const running = await startServer(config, { out, logStream: logs })
  const url = running.url
  const admin = (path: string, options: CallOptions = {}) =>
    call(url + path, { ...options, headers: { authorization: `Bearer ${KIT_ADMIN_TOKEN}`, ...options.headers } })
  const companies = await running.store.companies.list()
  return {
    url,
    running,
    demoId: companies[0]?.id ?? '',
    banner: () => banner,
    call: (path, options) => call(url + path, options),
    admin,
    api: (path, options = {}) => call(url + path, { key: KIT_DEMO_KEY, ...options }),
    close: () => running.close(),
  }
}

/** Calls `probe` until `done` holds for its answer (real time, at most `timeoutMs`); returns that answer. */
export async function until<T>(probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (done(value) || Date.now() > deadline) return value
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
