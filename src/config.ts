import { isIP } from 'node:net'
import { resolve } from 'node:path'
import { isApiKeyForm, isPresentableSecret } from './domain/formats.ts'

/** The service's configuration, read once from the environment at start-up. docs/configuration.md lists every variable. */
export interface Config {
  port: number
  host: string
  /** Where the embedded store keeps its file; `:memory:` (IN_MEMORY) keeps it in the process's memory. */
  dataDir: string
  /** Selects the MongoDB store when set; the embedded SQLite store otherwise. */
  mongodbUrl: string | null
  /** The base of every absolute URL the service writes (`next`, `next_url`, `links`); else the request's own. */
  publicUrl: string | null
  /** Enables the `/admin` routes, which expect `Authorization: Bearer <token>`. */
  adminToken: string | null
  logLevel: LogLevel
  /** Create the demo company on first start with an empty store. */
  demo: boolean
  /** Fastify's `trustProxy`: true, false, a hop count, or a list of trusted addresses. */
  trustProxy: boolean | number | string[]
  /** Requests per second a company may make across v1 and v2 (and an address without a valid key). */
  rateLimitPerSecond: number
  /** How long a graceful shutdown may take before the process exits anyway, its drain included. */
  shutdownTimeoutMs: number
  /** How long an API instance told to stop goes on answering, each answer closing its connection, before it closes. */
  shutdownDrainMs: number
  /** How long a client may take to send a whole request (headers and body) before it is answered 408. */
  requestTimeoutMs: number
  /** How often an idle import worker looks for an import to run. */
  importPollMs: number
  /** How long a worker's claim on an import holds without renewal (a dead worker's import is redone after it). */
  importLeaseMs: number
  /** How many days a finished import is kept (by the service's clock) before the workers delete it; 0: for good. */
  importRetentionDays: number
  /** The largest request body, in MiB: a larger one is answered 413. */
  bodyLimitMb: number
  /** Browser origins allowed to call the service (CORS); `*` is any origin; empty: CORS is off. */
  corsOrigins: string[]
  /** `serve --role worker`: the port of its health probes and metrics; null: the worker serves no HTTP. */
  workerHealthPort: number | null
  /**
   * Where `serve` runs the import worker: `thread` (a worker thread of its own, so that applying an import never
   * stops the HTTP event loop) or `inline` (on the HTTP thread, the fallback for a store a thread cannot open).
   */
  importWorker: ImportWorkerMode
  /** The most request-body bytes a company may have waiting in unfinished imports; past it an upsert is a 429. */
  importQueueLimitBytes: number
  /**
   * `system`: the service tells the system's time. `controlled`: the system's time plus an offset kept in the store,
   * moved only by `POST /admin/clock` (or the CLI's `clock`), so that tests move time without waiting.
   */
  clock: ClockMode
  /** How many requests of each company the request journal keeps (admin routes only); 0: none. */
  requestJournalSize: number
  /** The secret of the demo company's key (reproducible set-ups); null: a random one. */
  demoApiKey: string | null
}

export const CLOCK_MODES = ['system', 'controlled'] as const
export type ClockMode = (typeof CLOCK_MODES)[number]

/** The `DATA_DIR` that keeps the embedded store in memory: nothing is written to disk, and nothing outlives the process. */
export const IN_MEMORY = ':memory:'

const IMPORT_WORKER_MODES = ['thread', 'inline'] as const
export type ImportWorkerMode = (typeof IMPORT_WORKER_MODES)[number]

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

/**
 * `serve --test-mode`: what a connector's test suite needs of a stand-in, in one flag. These become the defaults
 * of their variables; a variable set in the environment keeps its value.
 */
export const TEST_MODE_DEFAULTS = {
  CLOCK: 'controlled',
  DATA_DIR: IN_MEMORY,
  ADMIN_TOKEN: 'commission-api-test-mode-admin-token',
  DEMO: 'on',
  DEMO_API_KEY: 'cak_test-mode-demo-key-0000000000000',
} as const

/** The environment with the test mode's defaults under it. */
export function withTestModeDefaults(env: Env): Env {
  const given = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value.trim() !== ''))
  return { ...TEST_MODE_DEFAULTS, ...given }
}

/** A configuration variable has a value the service cannot use. The message names the variable. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

type Env = Record<string, string | undefined>

const MIB = 1024 * 1024

/** The longest an import's lease may be (`IMPORT_LEASE_MS`): an hour. */
export const MAX_IMPORT_LEASE_MS = 3_600_000
/** IMPORT_POLL_MS and IMPORT_LEASE_MS unless set, also for a worker built without a configuration (tests, benchmarks). */
export const DEFAULT_IMPORT_POLL_MS = 250
export const DEFAULT_IMPORT_LEASE_MS = 60_000

/** What a parser makes of a variable's text: the value, or what is wrong with it. */
type Parsed<T> = { value: T } | { problem: string }

const problem = (text: string): { problem: string } => ({ problem: text })

/** Variables whose value is a secret: a refusal names them without showing the value. */
const SECRET_VARIABLES = new Set(['ADMIN_TOKEN', 'DEMO_API_KEY'])

/** A refused value as the error shows it: a secret not at all, a URL without the credentials it may carry. */
function shownValue(name: string, raw: string): string {
  if (SECRET_VARIABLES.has(name)) return '(secret, not shown)'
  // Up to the last @: a password may hold an @ or a / that its writer did not encode.
  return JSON.stringify(raw.replace(/^([a-z][a-z0-9+.-]*:\/\/).*@/i, '$1…@'))
}

/** Reads and validates the configuration; throws one ConfigError that names every bad variable. */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = []
  const read = <T>(name: string, fallback: T, parse: (raw: string) => Parsed<T>): T => {
    const raw = env[name]
    if (raw === undefined || raw.trim() === '') return fallback
    const parsed = parse(raw.trim())
    if ('value' in parsed) return parsed.value
    problems.push(`${name}=${shownValue(name, raw)}: ${parsed.problem}`)
    return fallback
  }

  const config: Config = {
    port: read('PORT', 3000, parsePort),
    host: read('HOST', '127.0.0.1', (raw) => ({ value: raw })),
    dataDir: read('DATA_DIR', resolve('./data'), (raw) => ({ value: raw.toLowerCase() === IN_MEMORY ? IN_MEMORY : resolve(raw) })),
    mongodbUrl: read<string | null>('MONGODB_URL', null, parseMongoUrl),
    publicUrl: read<string | null>('PUBLIC_URL', null, parsePublicUrl),
    adminToken: read<string | null>('ADMIN_TOKEN', null, parseSecret),
    logLevel: read('LOG_LEVEL', 'info', (raw) => oneOf(LOG_LEVELS, raw)),
    demo: read('DEMO', true, parseSwitch),
    trustProxy: read<boolean | number | string[]>('TRUST_PROXY', false, parseTrustProxy),
    rateLimitPerSecond: read('RATE_LIMIT_PER_SECOND', 80, (raw) => parseWholeNumber(raw, 1, 1_000_000)),
    shutdownTimeoutMs: read('SHUTDOWN_TIMEOUT_MS', 10_000, (raw) => parseWholeNumber(raw, 1, 3_600_000)),
    shutdownDrainMs: read('SHUTDOWN_DRAIN_MS', 0, (raw) => parseWholeNumber(raw, 0, 3_600_000)),
    requestTimeoutMs: read('REQUEST_TIMEOUT_MS', 120_000, (raw) => parseWholeNumber(raw, 1000, 3_600_000)),
    importPollMs: read('IMPORT_POLL_MS', DEFAULT_IMPORT_POLL_MS, (raw) => parseWholeNumber(raw, 10, 60_000)),
    importLeaseMs: read('IMPORT_LEASE_MS', DEFAULT_IMPORT_LEASE_MS, (raw) => parseWholeNumber(raw, 1_000, MAX_IMPORT_LEASE_MS)),
    importRetentionDays: read('IMPORT_RETENTION_DAYS', 0, (raw) => parseWholeNumber(raw, 0, 36_500)),
    // The default holds the top of the recommended batch, 5,000 records of 4 KiB, with its JSON (docs/decisions.md).
    bodyLimitMb: read('BODY_LIMIT_MB', 32, (raw) => parseWholeNumber(raw, 1, 512)),
    corsOrigins: read<string[]>('CORS_ORIGINS', [], parseOrigins),
    workerHealthPort: read<number | null>('WORKER_HEALTH_PORT', null, parsePort),
    importWorker: read('IMPORT_WORKER', 'thread', (raw) => oneOf(IMPORT_WORKER_MODES, raw)),
    importQueueLimitBytes: read('IMPORT_QUEUE_LIMIT_MB', 64, (raw) => parseWholeNumber(raw, 1, 1_000_000)) * MIB,
    clock: read('CLOCK', 'system', (raw) => oneOf(CLOCK_MODES, raw)),
    requestJournalSize: read('REQUEST_JOURNAL_SIZE', 1000, (raw) => parseWholeNumber(raw, 0, 100_000)),
    demoApiKey: read<string | null>('DEMO_API_KEY', null, parseApiKeySecret),
  }
  if (config.shutdownDrainMs >= config.shutdownTimeoutMs)
    problems.push(
      `SHUTDOWN_DRAIN_MS=${config.shutdownDrainMs}: must be less than SHUTDOWN_TIMEOUT_MS (${config.shutdownTimeoutMs}), which bounds the whole shutdown, its drain included`,
    )
  // A worker thread opens the store on a connection of its own: an in-memory database has no second connection.
  if (config.dataDir === IN_MEMORY && !config.mongodbUrl) {
    const explicit = env.IMPORT_WORKER?.trim()
    if (explicit?.toLowerCase() === 'thread')
      problems.push(
        `IMPORT_WORKER=${JSON.stringify(explicit)}: a worker thread cannot open an in-memory store (DATA_DIR=:memory:): use inline, its default there`,
      )
    config.importWorker = 'inline'
  }
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`)
  return config
}

/** One of `choices`, in any letter case, as the switches are read (`DEBUG`, `Controlled`). */
function oneOf<T extends string>(choices: readonly T[], raw: string): Parsed<T> {
  const choice = choices.find((item) => item === raw.toLowerCase())
  if (choice !== undefined) return { value: choice }
  return problem(choices.length === 2 ? `expected ${choices[0]} or ${choices[1]}` : `expected one of ${choices.join(', ')}`)
}

function parsePort(raw: string): Parsed<number> {
  const port = Number(raw)
  return /^\d+$/.test(raw) && port <= 65535 ? { value: port } : problem('expected a port number from 0 to 65535')
}

function parseWholeNumber(raw: string, min: number, max: number): Parsed<number> {
  const value = Number(raw)
  return /^\d+$/.test(raw) && value >= min && value <= max ? { value } : problem(`expected a whole number from ${min} to ${max}`)
}

function parseSwitch(raw: string): Parsed<boolean> {
  const value = raw.toLowerCase()
  if (['on', 'true', '1', 'yes'].includes(value)) return { value: true }
  if (['off', 'false', '0', 'no'].includes(value)) return { value: false }
  return problem('expected on or off')
}

function parseMongoUrl(raw: string): Parsed<string> {
  // The scheme in any letter case, as PUBLIC_URL's: the driver takes it in lower case only.
  const scheme = /^mongodb(\+srv)?:\/\//i.exec(raw)?.[0]
  if (scheme === undefined) return problem('expected a mongodb:// or mongodb+srv:// connection string')
  return { value: scheme.toLowerCase() + raw.slice(scheme.length) }
}

function parsePublicUrl(raw: string): Parsed<string> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return problem('expected an absolute URL such as https://api.example.com')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return problem('expected an http or https URL')
  if (url.search || url.hash) return problem('expected a URL without query or fragment')
  // It is written into every link and the OpenAPI document, and logged at start.
  if (url.username || url.password) return problem('expected a URL without a user name or password')
  return { value: url.href.replace(/\/+$/, '') }
}

/** The admin token: long enough not to be guessed, and of characters a header carries as they are. */
function parseSecret(raw: string): Parsed<string> {
  if (raw.length < 16) return problem('expected at least 16 characters')
  return isPresentableSecret(raw)
    ? { value: raw }
    : problem('expected printable ASCII characters only, without spaces at either end: a header cannot carry others as written')
}

/** The demo key's secret: of the form of every API key, which the logs know wherever a client puts it. */
function parseApiKeySecret(raw: string): Parsed<string> {
  return isApiKeyForm(raw) ? { value: raw } : problem('expected an API key: cak_ then at least 16 letters, digits, _ or -')
}

function parseTrustProxy(raw: string): Parsed<boolean | number | string[]> {
  const asSwitch = parseSwitch(raw)
  if ('value' in asSwitch) return asSwitch
  if (/^\d+$/.test(raw)) {
    // `01` is `1` with a leading zero, as numbers are read everywhere: on, not a count of one hop.
    const hops = Number(raw)
    return { value: hops > 1 ? hops : hops === 1 }
  }
  const addresses = listItems(raw)
  // Commas alone list nothing: the default, as a value of spaces only.
  if (addresses.length === 0) return { value: false }
  if (addresses.every(isAddressOrRange)) return { value: addresses }
  return problem('expected on, off, a hop count, or a comma-separated list of addresses or CIDR ranges')
}

/**
 * An IPv4 or IPv6 address, alone or with a prefix length its family allows (`10.0.0.0/8`, `fd00::/8`), from 1: a
 * range of every address (`/0`) is refused by the proxy check Fastify uses, and would trust any client anyway.
 */
function isAddressOrRange(text: string): boolean {
  const [address, prefix, ...rest] = text.split('/')
  const family = isIP(address)
  if (family === 0 || rest.length > 0) return false
  if (prefix === undefined) return true
  return /^\d{1,3}$/.test(prefix) && Number(prefix) >= 1 && Number(prefix) <= (family === 4 ? 32 : 128)
}

/** The items of a comma-separated list, trimmed; empty ones (`a,,b`, a trailing comma) are left out. */
function listItems(raw: string): string[] {
  return raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '')
}

/** A comma-separated list of origins (`scheme://host[:port]`, as a browser sends them), or `*`. */
function parseOrigins(raw: string): Parsed<string[]> {
  const origins: string[] = []
  for (const part of listItems(raw)) {
    if (part === '*') {
      origins.push(part)
      continue
    }
    let url: URL
    try {
      url = new URL(part)
    } catch {
      return problem(`${JSON.stringify(part)} is not an origin such as http://localhost:5173`)
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || `${url.origin}/` !== url.href.replace(/\/?$/, '/')) {
      return problem(`${JSON.stringify(part)} is not an origin (scheme://host[:port], without path, query or fragment)`)
    }
    origins.push(url.origin)
  }
  return { value: origins }
}
