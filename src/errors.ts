/**
 * The errors the domain raises. They know nothing of HTTP: `src/routes/errors.ts` maps each to its status
 * and body, in one place.
 */

/** One problem with the input: which parameter (`resource`) and what is wrong with it. */
export interface Issue {
  resource: string
  description: string
  /** The error family, `ValidationError` unless said otherwise. */
  error?: string
}

export class ValidationError extends Error {
  override name = 'ValidationError'
  readonly issues: Issue[]

  constructor(issues: Issue[] | Issue) {
    const list = Array.isArray(issues) ? issues : [issues]
    super(list.map((issue) => `${issue.resource}: ${issue.description}`).join('; '))
    this.issues = list
  }
}

export class NotFoundError extends Error {
  override name = 'NotFoundError'
  readonly resource: string

  constructor(resource: string, message = `${resource} not found`) {
    super(message)
    this.resource = resource
  }
}

export class UnauthorizedError extends Error {
  override name = 'UnauthorizedError'
}

export class ForbiddenError extends Error {
  override name = 'ForbiddenError'
}

/**
 * A bulk call refused as a whole for one or more reasons, each an Issue with its own family
 * (`ValidationError`, `NotFoundError`, `ConflictError`). Its status is that of the most basic family
 * present: 400 for any ValidationError, else 404 for any NotFoundError, else 409.
 */
export class BulkRefusedError extends Error {
  override name = 'BulkRefusedError'
  readonly issues: Issue[]

  constructor(issues: Issue[]) {
    super(issues.map((issue) => `${issue.resource}: ${issue.description}`).join('; '))
    this.issues = issues
  }

  get status(): 400 | 404 | 409 {
    const families = new Set(this.issues.map((issue) => issue.error ?? 'ValidationError'))
    if (families.has('ValidationError')) return 400
    return families.has('NotFoundError') ? 404 : 409
  }
}

/**
 * A call refused for now, to be sent again after `retryAfterSeconds`: the company has as many bytes waiting in
 * its imports as it may (`IMPORT_QUEUE_LIMIT_MB`). Nothing of the call was stored.
 */
export class QueueFullError extends Error {
  override name = 'QueueFullError'
  readonly retryAfterSeconds: number

  constructor(message: string, retryAfterSeconds: number) {
    super(message)
    this.retryAfterSeconds = retryAfterSeconds
  }
}
