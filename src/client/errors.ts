import type {
  ErrorBody,
  ForbiddenBody,
  ImportRecord,
  NotFoundBody,
  TooManyRequestsBody,
  UnauthorizedBody,
  ValidationErrorBody,
} from './types.ts'

/** What every error of a call carries: the request, the answer's status and body, and the request id. */
export interface ApiErrorDetails<Body = ErrorBody> {
  method: string
  url: string
  status: number
  body: Body
  /** `X-Request-Id` of the answer (else the one the client sent): quote it when reporting a problem. */
  requestId: string | null
  /** The answer's `Retry-After`, in seconds, when it gave one (a 429, a 503 of a store too busy to take a write). */
  retryAfterSeconds?: number | null
}

/**
 * An answer of the service with an error status. The subclasses name the families of the specification's
 * error table; a status outside it (405, 409, 414, 5xx from a gateway...) is a plain `ApiError`.
 */
export class ApiError<Body = ErrorBody> extends Error {
  override name = 'ApiError'
  readonly method: string
  readonly url: string
  readonly status: number
  readonly body: Body
  readonly requestId: string | null
  /**
   * Seconds the service asked to wait before the call is sent again, when it said: a 503 the client does not wait
   * for (a write is never sent again; a read's `Retry-After` past `retry.maxRetryAfterMs`), a 429 past its bounds.
   */
  readonly retryAfterSeconds: number | null

  constructor(details: ApiErrorDetails<Body>) {
    super(
      `${details.method} ${details.url} answered ${details.status}: ${summarize(details.body)}${details.requestId ? ` (request ${details.requestId})` : ''}`,
    )
    this.method = details.method
    this.url = details.url
    this.status = details.status
    this.body = details.body
    this.requestId = details.requestId
    this.retryAfterSeconds = details.retryAfterSeconds ?? null
  }
}

/** 400 (and 413): `{count, errors: [{error, resource, description}]}`; `resource` names the offending parameter. */
export class ValidationApiError extends ApiError<ValidationErrorBody> {
  override name = 'ValidationApiError'

  /** The parameters refused, in the order given. */
  get resources(): string[] {
    return Array.isArray(this.body?.errors) ? this.body.errors.map((error) => error.resource) : []
  }
}

/** 401: a missing or unknown key. */
export class UnauthorizedApiError extends ApiError<UnauthorizedBody> {
  override name = 'UnauthorizedApiError'
}

/** 403: the company has not enabled the public API. */
export class ForbiddenApiError extends ApiError<ForbiddenBody> {
  override name = 'ForbiddenApiError'
}

/** 404: an unknown id, a sandbox id, or an id of the wrong kind of structure. */
export class NotFoundApiError extends ApiError<NotFoundBody> {
  override name = 'NotFoundApiError'
}

/** 429 that the client stopped waiting for: too many retries, or a `Retry-After` beyond its bound. */
export class RateLimitedError extends ApiError<TooManyRequestsBody> {
  override name = 'RateLimitedError'

  constructor(details: ApiErrorDetails<TooManyRequestsBody>, retryAfterSeconds: number | null) {
    super({ ...details, retryAfterSeconds })
  }
}

/** The request never got a complete answer (connection refused or cut, timeout), after the retries allowed. */
export class ConnectionError extends Error {
  override name = 'ConnectionError'
  readonly method: string
  readonly url: string
  /**
   * The `X-Request-Id` the client sent with the last attempt. After a write cut off in transit, the service's log
   * (or the test kit's journal) says by it whether the request arrived, and the import it made.
   */
  readonly requestId: string

  constructor(method: string, url: string, cause: unknown, requestId: string) {
    super(`${method} ${url} failed: ${cause instanceof Error ? cause.message : String(cause)} (request ${requestId})`, { cause })
    this.method = method
    this.url = url
    this.requestId = requestId
  }
}

/**
 * `waitForImport` gave up before the import finished; `last` is the import as last read, null when no read
 * answered in time.
 */
export class ImportTimeoutError extends Error {
  override name = 'ImportTimeoutError'
  readonly last: ImportRecord | null

  constructor(importId: string, timeoutMs: number, last: ImportRecord | null) {
    super(
      last
        ? `import ${importId} was still ${last.status} after ${timeoutMs} ms`
        : `import ${importId} could not be read within ${timeoutMs} ms`,
    )
    this.last = last
  }
}

const ERROR_CLASSES: Record<number, new (details: ApiErrorDetails<never>) => ApiError<unknown>> = {
  400: ValidationApiError,
  401: UnauthorizedApiError,
  403: ForbiddenApiError,
  404: NotFoundApiError,
  413: ValidationApiError,
}

/**
 * A success status whose body is not what the service answers there (not JSON, or without its `data` list): most
 * likely the base URL points at something else (another application, a proxy's page), which may have done anything
 * with a write.
 */
export class UnexpectedAnswerError<Body = unknown> extends ApiError<Body> {
  override name = 'UnexpectedAnswerError'

  constructor(details: ApiErrorDetails<Body>, expected: string) {
    super(details)
    this.message = `${details.method} ${details.url} answered ${details.status} with ${described(details.body)}, where the service answers ${expected}: is the base URL the service's?`
  }
}

function described(body: unknown): string {
  if (typeof body === 'string') return body === '' ? 'an empty body' : `a body that is not JSON (${JSON.stringify(body.slice(0, 60))})`
  return `JSON ${JSON.stringify(body).slice(0, 60)}`
}

/** The typed error for an error answer (a 429 has its own path: see the transport). */
export function apiErrorOf(details: ApiErrorDetails<unknown>): ApiError<unknown> {
  const ErrorClass = ERROR_CLASSES[details.status] ?? ApiError
  return new ErrorClass(details as ApiErrorDetails<never>)
}

function summarize(body: unknown): string {
  if (typeof body === 'string') return body.slice(0, 200) || '(empty body)'
  if (body && typeof body === 'object') {
    const { message, errors } = body as { message?: unknown; errors?: unknown }
    if (Array.isArray(errors)) {
      return errors.map((error: { resource?: string; description?: string }) => `${error.resource}: ${error.description}`).join('; ')
    }
    if (typeof message === 'string') return message
  }
  return JSON.stringify(body)
}
