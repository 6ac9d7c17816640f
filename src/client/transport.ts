import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent, type Dispatcher, request } from 'undici'
import { apiErrorOf, ConnectionError, RateLimitedError, UnexpectedAnswerError } from './errors.ts'
import type { TooManyRequestsBody } from './types.ts'

export interface RateLimitOptions {
  /** How many 429 answers in a row one call waits through before it throws `RateLimitedError` (default 5). */
  maxRetries?: number
  /** The longest 429 `Retry-After` the client waits out; a longer one throws `RateLimitedError` at once (default 60 s). */
  maxWaitMs?: number
}

export interface RetryOptions {
  /**
   * Retries of a read cut off by the network or answered 502/503/504 (default 3). Writes are never resent. A 503's
   * `Retry-After` is waited for when it is longer than the pause below.
   */
  attempts?: number
  /** The first pause; each retry doubles it, plus a little at random (default 250 ms). */
  baseDelayMs?: number
  /**
   * The longest 503 `Retry-After` a read waits for before it is sent again; a longer one is the caller's at once, an
   * `ApiError` 503 (default 10 s). Each retry may wait this long, on every page of a walk: keep it short.
   */
  maxRetryAfterMs?: number
}

export interface TransportOptions {
  baseUrl: string
  apiKey: string
  /** Requests per second the client allows itself, spaced evenly (default: no pacing; 429s are still waited out). */
  requestsPerSecond?: number
  rateLimit?: RateLimitOptions
  retry?: RetryOptions
  /** Time allowed for the headers, and then between two chunks of the body (default 60 s). */
  timeoutMs?: number
  /** An undici dispatcher of your own (a proxy agent...); the client then leaves closing it to you. */
  dispatcher?: Dispatcher
}

export type Method = 'GET' | 'PUT' | 'POST' | 'DELETE'

export interface ApiRequest {
  method: Method
  /** A path under the base URL (`/v2/...`), or an absolute URL the service wrote (`next_url`, `next`). */
  path: string
  query?: Record<string, string | number | boolean | undefined>
  body?: unknown
  /** Override the key: null sends none (conformance checks use it). */
  apiKey?: string | null
  headers?: Record<string, string>
  /**
   * Abandons the request when it aborts, and the waits before it too (pacing, a 429's `Retry-After`, the pause
   * before a read is sent again): the call then rejects with the signal's reason.
   */
  signal?: AbortSignal
}

export interface ApiResponse<Body = unknown> {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: Body
  requestId: string | null
  /** The service's clock at the answer (`Date` header), to the second; null without the header. */
  date: Date | null
  url: string
}

const RETRYABLE_STATUSES = new Set([502, 503, 504])

/**
 * Sends requests with the key, paces them, waits out 429s (bounded), retries reads the network cut, and
 * turns error answers into typed errors. Everything above it speaks in paths and bodies.
 */
export class Transport {
  readonly baseUrl: URL
  readonly #apiKey: string
  readonly #dispatcher: Dispatcher
  readonly #ownsDispatcher: boolean
  /** The spacing `requestsPerSecond` asks for (0: none). */
  readonly #spacingMs: number
  /** The spacing the limit a 429 stated asks for (0 until a 429 came): the slower of the two holds. */
  #limitSpacingMs = 0
  readonly #maxRateRetries: number
  readonly #maxWaitMs: number
  readonly #retryAttempts: number
  readonly #retryDelayMs: number
  readonly #maxRetryAfterMs: number
  readonly #timeoutMs: number
  /** When the next request may leave (pacing), and until when a 429 told every request to hold. */
  #nextSlot = 0
  #pausedUntil = 0

  constructor(options: TransportOptions) {
    if (!options.baseUrl) throw new TypeError('baseUrl is required')
    if (!options.apiKey) throw new TypeError('apiKey is required')
    this.baseUrl = new URL(options.baseUrl.replace(/\/+$/, '') + '/')
    this.#apiKey = options.apiKey
    this.#ownsDispatcher = !options.dispatcher
    this.#dispatcher = options.dispatcher ?? new Agent({ keepAliveTimeout: 4_000 })
    this.#spacingMs = options.requestsPerSecond ? 1000 / options.requestsPerSecond : 0
    this.#maxRateRetries = options.rateLimit?.maxRetries ?? 5
    this.#maxWaitMs = options.rateLimit?.maxWaitMs ?? 60_000
    this.#retryAttempts = options.retry?.attempts ?? 3
    this.#retryDelayMs = options.retry?.baseDelayMs ?? 250
    this.#maxRetryAfterMs = options.retry?.maxRetryAfterMs ?? 10_000
    this.#timeoutMs = options.timeoutMs ?? 60_000
  }

  /** Sends a request and returns the answer whatever its status (no typed error; 429s are still waited out). */
  async raw<Body = unknown>(apiRequest: ApiRequest): Promise<ApiResponse<Body>> {
    const url = this.urlOf(apiRequest.path, apiRequest.query)
    const readOnly = apiRequest.method === 'GET'
    const { signal } = apiRequest
    for (let rateRetries = 0, failures = 0; ;) {
      signal?.throwIfAborted()
      await this.#waitForSlot(signal)
      const requestId = headerValue(apiRequest.headers, 'x-request-id') ?? randomUUID()
      let response: ApiResponse<Body>
      try {
        response = await this.#send<Body>(apiRequest, url, requestId)
      } catch (error) {
        if (signal?.aborted) throw signal.reason
        // A write whose request may have reached the service is not sent again: it could create a second import.
        // Its request id is the one to look for in the service's log (or the test kit's journal) to know.
        if ((!readOnly && !refusedBeforeSending(error)) || failures >= this.#retryAttempts)
          throw new ConnectionError(apiRequest.method, url.href, error, requestId)
        await pause(this.#backoffMs(failures++), signal)
        continue
      }
      if (response.status === 429) {
        const retryAfter = retryAfterSeconds(response.headers['retry-after'])
        const waitMs = retryAfter === null ? 1000 * 2 ** rateRetries : retryAfter * 1000
        if (rateRetries >= this.#maxRateRetries || waitMs > this.#maxWaitMs) {
          throw new RateLimitedError(errorDetails(apiRequest.method, url, response as ApiResponse<TooManyRequestsBody>), retryAfter)
        }
        rateRetries++
        // Every request of this client holds, not only this one: they share the company's budget. And from now on
        // they leave no faster than the limit the service states, so that those held do not all come back at once,
        // to meet another 429 together until their retries run out.
        this.#pausedUntil = Math.max(this.#pausedUntil, Date.now() + withJitter(waitMs))
        this.#paceAtLimitOf(response)
        continue
      }
      if (readOnly && RETRYABLE_STATUSES.has(response.status) && failures < this.#retryAttempts) {
        const waitMs = this.#retryWaitMs(response, failures++)
        if (waitMs === null) return response
        await pause(waitMs, signal)
        continue
      }
      return response
    }
  }

  /**
   * How long a read answered 502, 503 or 504 waits before it is sent again: the backoff, or a 503's `Retry-After`
   * when it is longer (the service says when it expects to be back: sooner would only meet another 503; a
   * `Retry-After` of 0, or a date past, still backs off). Null when it asks for longer than `maxRetryAfterMs`: the
   * answer is then the caller's, rather than hold a call, and every page of a walk, for minutes.
   */
  #retryWaitMs(response: ApiResponse<unknown>, failures: number): number | null {
    const retryAfter = response.status === 503 ? retryAfterSeconds(response.headers['retry-after']) : null
    if (retryAfter !== null && retryAfter * 1000 > this.#maxRetryAfterMs) return null
    return withJitter(Math.max((retryAfter ?? 0) * 1000, this.#retryDelayMs * 2 ** failures))
  }

  /** The pause before the retry after `failures` failed attempts: doubling each time. */
  #backoffMs(failures: number): number {
    return withJitter(this.#retryDelayMs * 2 ** failures)
  }

  /** Sends a request; an error status throws the typed error of its family. */
  async send<Body>(apiRequest: ApiRequest): Promise<ApiResponse<Body>> {
    const response = await this.raw<Body>(apiRequest)
    if (response.status >= 400) throw apiErrorOf(errorDetails(apiRequest.method, new URL(response.url), response))
    // Every answer of the service with a body is a JSON object (a 204 has none).
    if (response.status !== 204 && (response.body === null || typeof response.body !== 'object' || Array.isArray(response.body)))
      throw new UnexpectedAnswerError(errorDetails(apiRequest.method, new URL(response.url), response), 'a JSON object')
    return response
  }

  /**
   * The absolute URL of a path, or of a URL the service wrote. The key is only ever sent to the base URL's
   * origin: an absolute URL of another origin is refused.
   */
  urlOf(path: string, query: ApiRequest['query'] = {}): URL {
    let url: URL
    if (/^https?:\/\//i.test(path)) {
      url = new URL(path)
      if (url.origin !== this.baseUrl.origin)
        throw new TypeError(`refusing to send the key to ${url.origin}: the base URL is ${this.baseUrl.origin}`)
    } else {
      url = new URL(path.replace(/^\/+/, ''), this.baseUrl)
    }
    for (const [name, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(name, String(value))
    return url
  }

  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close()
  }

  async #send<Body>(apiRequest: ApiRequest, url: URL, requestId: string): Promise<ApiResponse<Body>> {
    // The caller's own X-Request-Id, when it gave one, is `requestId` already, under the name it chose.
    const headers: Record<string, string> = { accept: 'application/json', ...apiRequest.headers }
    if (headerValue(headers, 'x-request-id') === undefined) headers['x-request-id'] = requestId
    const key = apiRequest.apiKey === undefined ? this.#apiKey : apiRequest.apiKey
    if (key !== null) headers['x-api-key'] = key
    let payload: string | undefined
    if (apiRequest.body !== undefined) {
      payload = typeof apiRequest.body === 'string' ? apiRequest.body : JSON.stringify(apiRequest.body)
      headers['content-type'] ??= 'application/json'
    }
    const response = await request(url, {
      method: apiRequest.method,
      headers,
      body: payload,
      dispatcher: this.#dispatcher,
      headersTimeout: this.#timeoutMs,
      bodyTimeout: this.#timeoutMs,
      signal: apiRequest.signal,
    })
    // The whole body is read here, so that a connection cut mid-answer fails this attempt, not the caller.
    const text = await response.body.text()
    const type = String(response.headers['content-type'] ?? '')
    const echoed = response.headers['x-request-id']
    const date = response.headers.date ? new Date(String(response.headers.date)) : null
    return {
      status: response.statusCode,
      headers: response.headers,
      body: (type.includes('json') && text !== '' ? parsedOrText(text) : text) as Body,
      requestId: typeof echoed === 'string' ? echoed : requestId,
      date: date && !Number.isNaN(date.getTime()) ? date : null,
      url: url.href,
    }
  }

  /**
   * Paces the client a little under the limit a 429 states (`RateLimit-Limit` requests a second), for the rest of its
   * life, unless `requestsPerSecond` paces it slower: at the limit itself, the requests that fall either side of the
   * service's one-second windows meet 429s. A limit that is not a whole number from 1 is not one (a spacing of
   * minutes would stall the client); a lower limit stated later slows it further.
   */
  #paceAtLimitOf(response: ApiResponse<unknown>): void {
    const limit = statedLimit(response.headers)
    if (limit !== null) this.#limitSpacingMs = Math.max(this.#limitSpacingMs, 1000 / (limit * LIMIT_SHARE))
  }

  async #waitForSlot(signal: AbortSignal | undefined): Promise<void> {
    for (;;) {
      const now = Date.now()
      const at = Math.max(this.#nextSlot, this.#pausedUntil, now)
      if (at <= now) break
      await pause(at - now, signal)
    }
    const spacingMs = Math.max(this.#spacingMs, this.#limitSpacingMs)
    if (spacingMs > 0) this.#nextSlot = Math.max(this.#nextSlot, Date.now()) + spacingMs
  }
}

/** The requests a second an answer's `RateLimit-Limit` states (the first of a list), or null when it states none. */
export function statedLimit(headers: ApiResponse<unknown>['headers']): number | null {
  const first = [headers['ratelimit-limit']].flat()[0]?.split(',')[0].trim() ?? ''
  return /^[1-9]\d*$/.test(first) ? Number(first) : null
}

/** The share of the service's rate limit a client paces itself at once it met a 429. */
const LIMIT_SHARE = 0.9

/**
 * A wait with a little added at random (up to a tenth, at most 250 ms), so that the requests told to wait the same
 * time, this client's and others', do not all come back at the same instant.
 */
function withJitter(ms: number): number {
  return ms + Math.random() * Math.min(250, ms / 10)
}

/** Waits `ms`; rejects with the signal's reason when it aborts first (as an aborted request does). */
export async function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  try {
    await sleep(ms, undefined, { signal })
  } catch (error) {
    throw signal?.aborted ? signal.reason : error
  }
}

/** A request header's value, whatever the case of its name. */
function headerValue(headers: Record<string, string> | undefined, name: string): string | undefined {
  return Object.entries(headers ?? {}).find(([key]) => key.toLowerCase() === name)?.[1]
}

function errorDetails<Body>(method: string, url: URL, response: ApiResponse<Body>) {
  const { status, body, requestId, headers } = response
  return { method, url: url.href, status, body, requestId, retryAfterSeconds: retryAfterSeconds(headers['retry-after']) }
}

/**
 * `Retry-After` as seconds: a number of seconds (a fraction rounded up), or an HTTP date (it starts with the day's
 * name: `Sun, 06 Nov 1994 08:49:37 GMT`). Anything else is null, and the caller backs off on its own: `Date.parse`
 * alone reads `1.5` or `-1` as dates of 2001, long past, which would mean no wait at all.
 */
export function retryAfterSeconds(header: string | string[] | undefined): number | null {
  const raw = (Array.isArray(header) ? header[0] : header)?.trim()
  if (raw === undefined || raw === '') return null
  if (/^\d+(\.\d+)?$/.test(raw)) return Math.ceil(Number(raw))
  if (!/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? /.test(raw)) return null
  const at = Date.parse(raw)
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000))
}

/** Whether the request certainly never reached the service (nothing listened), so that sending it again is safe. */
function refusedBeforeSending(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code
  return code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN'
}

/** A body that says it is JSON, parsed; as its text when it is not JSON after all (told by the caller, not a crash). */
function parsedOrText(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}
