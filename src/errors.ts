/**
 * The errors the domain raises. They know nothing of HTTP: `src/routes/errors.ts` maps each to its status
 * and body, in one place.
 */

/**
 * A refusal of the client's request (a 4xx). It is answered, never logged (`src/routes/errors.ts`), so it is made
 * without the stack trace V8 would capture: with a request's async frames, that capture took about a third of the
 * CPU time of a refused request (docs/performance.md, "Refusals without a stack trace").
 */
export class ClientError extends Error {
  constructor(message?: string) {
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    super(message)
    Error.stackTraceLimit = limit
  }
}

/** One problem with the input: which parameter (`resource`) and what is wrong with it. */
export interface Issue {
  resource: string
  description: string
  /** The error family, `ValidationError` unless said otherwise. */
  error?: string
}

/**
 * The request is refused: a 400 listing every issue. An issue may name another family than ValidationError
 * (the archive call lists `NotFoundError` and `ConflictError` issues in its 400 too).
 */
export class ValidationError extends ClientError {
  override name = 'ValidationError'
  readonly issues: Issue[]

  constructor(issues: Issue[] | Issue) {
    const list = Array.isArray(issues) ? issues : [issues]
    super(list.map((issue) => `${issue.resource}: ${issue.description}`).join('; '))
    this.issues = list
  }
}

export class NotFoundError extends ClientError {
  override name = 'NotFoundError'
  readonly resource: string

  constructor(resource: string, message = `${resource} not found`) {
    super(message)
    this.resource = resource
  }
}

export class UnauthorizedError extends ClientError {
  override name = 'UnauthorizedError'
}

export class ForbiddenError extends ClientError {
  override name = 'ForbiddenError'
}

/** A request refused for now, to be sent again after `retryAfterSeconds` (a 429). */
export class TooManyRequestsError extends ClientError {
  override name = 'TooManyRequestsError'
  readonly retryAfterSeconds: number

  constructor(message: string, retryAfterSeconds: number) {
    super(message)
    this.retryAfterSeconds = retryAfterSeconds
  }
}

/**
 * A call refused for now, to be sent again after `retryAfterSeconds`: the company has as many bytes waiting in
 * its imports as it may (`IMPORT_QUEUE_LIMIT_MB`). Nothing of the call was stored.
 */
export class QueueFullError extends TooManyRequestsError {
  override name = 'QueueFullError'
}

/**
 * A read refused for now, to be sent again after `retryAfterSeconds`: as many reads of its company as may wait for
 * their turn in this instance wait already (`src/routes/fair-reads.ts`). Nothing of it was done.
 */
export class ReadQueueFullError extends TooManyRequestsError {
  override name = 'ReadQueueFullError'
}

/** The service cannot serve the request now (a 503, which clients retry), after `retryAfterSeconds` when it is known. */
export class ServiceUnavailableError extends Error {
  override name = 'ServiceUnavailableError'
  readonly retryAfterSeconds: number | undefined

  constructor(message: string, retryAfterSeconds?: number) {
    super(message)
    this.retryAfterSeconds = retryAfterSeconds
  }
}

/**
 * A failure answered with the stable body of a failure of ours (a 500) on purpose: an injected fault. Unlike an
 * unexpected error, it is not logged as a failure.
 */
export class SimulatedServerError extends Error {
  override name = 'SimulatedServerError'
}

/**
 * Waiting for something took longer than the caller allowed (the admin drain's `timeout_ms`): a 408 whose body
 * is the 400 family's, listing what was still waited for.
 */
export class TimedOutError extends ClientError {
  override name = 'TimedOutError'
  readonly issues: Issue[]

  constructor(issue: Issue) {
    super(`${issue.resource}: ${issue.description}`)
    this.issues = [issue]
  }
}
