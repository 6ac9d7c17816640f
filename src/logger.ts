import type { FastifyRequest } from 'fastify'
import pino, { type DestinationStream, type LoggerOptions } from 'pino'
import { carriesSecret, secretsOf } from './auth/api-keys.ts'
import type { LogLevel } from './config.ts'

/**
 * The query parameters of the interface and of the admin routes, whose values are logged. Any other parameter's value
 * is replaced: a client may put a secret under any name (`?password=`, `?auth=`, `?k=`), and a list of secret-looking
 * names always misses one. (A value of the service's key form is replaced under any name: `carriesSecret`.)
 */
const LOGGED_QUERY_PARAMETERS = new Set([
  'start_id',
  'limit',
  'offset',
  'last_modified_after',
  'last_modified_before',
  'debounce',
  'all',
  'keep_overrides',
  // The admin routes': an operator reads in the log what a drain waited for, or what a journal read asked.
  'timeout_ms',
  'status',
  'method',
  'since',
  'path_prefix',
])

export const REDACTED = '[Redacted]'

/** A request's path with every segment that carries a secret (`carriesSecret`) replaced. */
function redactPath(path: string, known: readonly unknown[]): string {
  if (!carriesSecret(path, known)) return path
  return path
    .split('/')
    .map((segment) => (carriesSecret(segment, known) ? REDACTED : segment))
    .join('/')
}

/**
 * The path and query of a request's URL as the request log writes them: the values of unknown query parameters
 * replaced, and any path segment, query name or query value that carries a secret (`carriesSecret`: an API key of
 * the service's form, or one of `known`, the request's `secretsOf`).
 */
export function redactUrl(url: string, known: readonly unknown[]): string {
  const question = url.indexOf('?')
  const safePath = redactPath(question === -1 ? url : url.slice(0, question), known)
  if (question === -1) return safePath
  // In two passes over the parameters: `set` and `getAll` each scan every parameter, which made a URL of a few
  // thousand names cost about 100 ms of CPU to log (before any key or rate-limit check).
  // A name that carries a key is itself written `[Redacted]`: a client may send its key as a name (`?cak_…=1`).
  const entries = [...new URLSearchParams(url.slice(question + 1))].map(([name, value]): [string, string] =>
    carriesSecret(name, known) ? [REDACTED, value] : [name, value],
  )
  const redacted = new Set<string>()
  for (const [name, value] of entries) {
    if (!LOGGED_QUERY_PARAMETERS.has(name) || carriesSecret(value, known)) redacted.add(name)
  }
  // A redacted parameter is written once, where it first came; the others as they came.
  const logged = new URLSearchParams()
  const written = new Set<string>()
  for (const [name, value] of entries) {
    if (!redacted.has(name)) logged.append(name, value)
    else if (!written.has(name)) {
      written.add(name)
      logged.append(name, REDACTED)
    }
  }
  return `${safePath}?${logged.toString()}`
}

/** The most bytes of log lines kept while stdout refuses them (its file's disk full); later lines are dropped. */
const UNWRITTEN_LOG_LIMIT_BYTES = 16 * 1024 * 1024

/**
 * Where the logs go when no stream is given: stdout, written synchronously. pino's default is asynchronous and
 * flushes what is pending when the process exits; when stdout is a closed pipe (`npm start | head`) that flush
 * retries the failed write forever and the process never exits, whatever SHUTDOWN_TIMEOUT_MS says. Written
 * synchronously, the first failed write is seen at once, and pino then drops the logs instead of retrying.
 *
 * Any other failed write (stdout a file on a full disk: ENOSPC) is an error event that pino passes on, and that
 * nobody handled: it ended the process at the first request line, when the store's disk filled up under a server
 * logging to it. The lines are kept instead (up to UNWRITTEN_LOG_LIMIT_BYTES) and written with the next line once
 * the file takes them again. So nothing logs at `fatal`: pino then flushes synchronously, and while lines are kept
 * that flush retries the refused write without end.
 */
export function logDestination(): DestinationStream {
  const destination = pino.destination({ dest: 1, sync: true, maxLength: UNWRITTEN_LOG_LIMIT_BYTES })
  destination.on('error', () => {})
  return destination
}

/**
 * A process whose stdout or stderr reader has gone away keeps serving: a write there fails with EPIPE, which
 * Node reports as an error nobody handles, and which would otherwise end the process as an uncaught error.
 */
export function surviveClosedOutput(): void {
  for (const output of [process.stdout, process.stderr]) {
    output.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error
    })
  }
}

/** pino options: API keys and bearer tokens are redacted wherever a header object is logged. */
export function loggerOptions(level: LogLevel): LoggerOptions {
  return {
    level,
    redact: {
      paths: [
        'req.headers["x-api-key"]',
        'req.headers.authorization',
        'headers["x-api-key"]',
        'headers.authorization',
        '*.headers["x-api-key"]',
        '*.headers.authorization',
      ],
      censor: REDACTED,
    },
    serializers: {
      req: (request: FastifyRequest) => ({
        method: request.method,
        url: redactUrl(request.url, secretsOf(request, request.server?.config?.adminToken)),
        remoteAddress: request.ip,
      }),
    },
  }
}
