import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify'
import {
  ClientError,
  ForbiddenError,
  type Issue,
  NotFoundError,
  ServiceUnavailableError,
  SimulatedServerError,
  TimedOutError,
  TooManyRequestsError,
  UnauthorizedError,
  ValidationError,
} from '../errors.ts'
import { keyOfPointerSegment } from '../domain/json-pointer.ts'
import { StoreBusyError, StoreFullError, StoreUnconfirmedError, StoreUpgradedError } from '../store/port.ts'
import { trackRouteMethods } from './method-not-allowed.ts'
import { originFormPath } from './route-table.ts'
import type { ValidationErrorBody } from './schemas.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What a 400 or 413 of the route calls its body as a whole (`DATA_BODY` of v1's `{data}` calls); `body` by default. */
    bodyResource?: string
  }
}

/** How long a client is asked to wait when the store's disk is full: room is made by an operator, not in a second. */
const FULL_DISK_RETRY_AFTER_SECONDS = 30

/** A full disk refuses every write until there is room: said once a minute, not once a request. */
const fullDiskReported = onceEvery(60_000)

/** Due at the first call, then at most once every `ms`. */
function onceEvery(ms: number): { due(): boolean } {
  let last = Number.NEGATIVE_INFINITY
  return {
    due() {
      const now = performance.now()
      if (now - last < ms) return false
      last = now
      return true
    },
  }
}

/** The one body of a 500: never the internal message. */
export const SERVER_ERROR_BODY = { message: 'Internal server error', type: 'InternalServerError' }

/** The 400 body of the specification, for a list of issues. */
export function validationBody(issues: readonly Issue[]): ValidationErrorBody {
  return {
    count: issues.length,
    errors: issues.map((issue) => ({
      error: issue.error ?? 'ValidationError',
      resource: issue.resource,
      description: issue.description,
    })),
  }
}

interface SchemaIssue {
  instancePath?: string
  message?: string
  params?: Record<string, unknown>
}

/**
 * Which parameter a schema validation error is about: the first segment of its path, else the missing one.
 * The path is a JSON pointer, escaped with `~1` and `~0` only: a `%` in it is the key's own.
 */
function resourceOf(issue: SchemaIssue, context: string | undefined): string {
  const segment = issue.instancePath?.split('/').find((part) => part !== '')
  if (segment) return keyOfPointerSegment(segment)
  const missing = issue.params?.missingProperty ?? issue.params?.additionalProperty
  if (typeof missing === 'string') return missing
  return context === 'querystring' ? 'query' : (context ?? 'request')
}

function describe(issue: SchemaIssue): string {
  const additional = issue.params?.additionalProperty
  if (typeof additional === 'string') return `unknown parameter ${additional}`
  const allowed = issue.params?.allowedValues
  if (Array.isArray(allowed)) return `${issue.message ?? 'invalid value'}: ${allowed.join(', ')}`
  return issue.message ?? 'invalid value'
}

function schemaIssues(error: FastifyError): Issue[] {
  const context = error.validationContext
  return (error.validation ?? []).map((issue) => ({
    resource: resourceOf(issue as SchemaIssue, context),
    description: describe(issue as SchemaIssue),
  }))
}

/**
 * Fastify's error for a schema's refusal, with Fastify's message, made without a stack trace (ClientError says
 * why). The error handler answers it from the `validation` Fastify adds to it.
 */
export const schemaRefusal = (errors: FastifySchemaValidationError[], dataVar: string): Error =>
  new ClientError(errors.map((error) => `${dataVar}${error.instancePath} ${error.message ?? ''}`).join(', '))

/** Issues for the framework's own 4xx errors (bad JSON, wrong content type, body too large...). */
function frameworkIssues(error: FastifyError): Issue[] {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return [{ resource: 'Content-Type', description: 'unsupported content type: send application/json' }]
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return [{ resource: 'body', description: 'request body is too large' }]
    default:
      return [{ resource: 'body', description: error.message }]
  }
}

/**
 * The one place where errors become HTTP responses, with the specification's bodies. A 5xx never carries
 * the internal message or a stack: it is logged with the request id and answered with a stable body.
 */
export function registerErrorHandling(app: FastifyInstance): NotFoundHandler {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof ValidationError) return reply.code(400).send(validationBody(namingBody(request, error.issues)))
    if (error instanceof TimedOutError) return reply.code(408).send(validationBody(error.issues))
    if (error instanceof NotFoundError) {
      return reply.code(404).send({ message: error.message, resource: error.resource, type: 'NotFoundError' })
    }
    if (error instanceof UnauthorizedError) return reply.code(401).send({ message: error.message, type: 'UnauthorizedError' })
    // A framework's 403: the documentation's files refuse a path that leads outside them (@fastify/static).
    if (error instanceof ForbiddenError || error.statusCode === 403) {
      return reply.code(403).send({ message: error.message, type: 'ForbiddenError', error: 'ForbiddenError' })
    }
    if (error instanceof TooManyRequestsError) {
      return reply
        .code(429)
        .header('retry-after', String(error.retryAfterSeconds))
        .send({ message: error.message, type: 'TooManyRequestsError' })
    }
    if (error instanceof ServiceUnavailableError) {
      if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds))
      return reply.code(503).send({ message: error.message, type: 'ServiceUnavailableError' })
    }
    if (error instanceof StoreFullError) {
      if (fullDiskReported.due()) request.log.error({ err: error }, "the store's disk is full: writes are refused until there is room")
      return reply.code(503).header('retry-after', FULL_DISK_RETRY_AFTER_SECONDS).send({
        message: "The service's disk is full; nothing was done: try again once its operator has made room",
        type: 'ServiceUnavailableError',
      })
    }
    if (error instanceof StoreBusyError) {
      request.log.warn({ err: error }, 'the store was busy or out of reach')
      return reply
        .code(503)
        .header('retry-after', 1)
        .send({ message: 'The store is busy or out of reach for now; nothing was done: try again', type: 'ServiceUnavailableError' })
    }
    if (error instanceof StoreUnconfirmedError) {
      // No Retry-After: sent again as it is, the write may be done twice.
      request.log.warn({ err: error }, 'the store was out of reach before it confirmed a write')
      return reply.code(503).send({
        message: 'The store was out of reach before it confirmed the write, which may have been done: check before sending it again',
        type: 'ServiceUnavailableError',
      })
    }
    if (error instanceof StoreUpgradedError) {
      request.log.error({ err: error }, 'the store was upgraded by a newer version of the service')
      return reply.code(503).send({
        message:
          'This instance runs an older version than the store it serves; nothing was done: send it to an instance of the new version',
        type: 'ServiceUnavailableError',
      })
    }
    if (error instanceof SimulatedServerError) return reply.code(500).send(SERVER_ERROR_BODY)
    if (error.validation) return reply.code(400).send(validationBody(namingBody(request, schemaIssues(error))))
    const status = error.statusCode ?? 500
    if (status === 429) return reply.code(429).send({ message: error.message, type: 'TooManyRequestsError' })
    if (status === 412 || status === 416) {
      // The documentation's files answer a precondition or a range they cannot meet (@fastify/static).
      return reply.code(status).send(validationBody([{ resource: 'request', description: error.message }]))
    }
    if (status >= 400 && status < 500) {
      // 413 stays 413 (the size limit is the cause); other client errors of the framework are 400s.
      return reply.code(status === 413 ? 413 : 400).send(validationBody(namingBody(request, frameworkIssues(error))))
    }
    request.log.error({ err: error }, 'request failed')
    return reply.code(500).send(SERVER_ERROR_BODY)
  })

  const answeredMethodNotAllowed = trackRouteMethods(app)
  const answerNotFound: NotFoundHandler = (request, reply) => {
    if (answeredMethodNotAllowed(request, reply)) return
    reply.code(404).send({ message: `No route ${request.method} ${originFormPath(request.url)}`, resource: 'route', type: 'NotFoundError' })
  }
  app.setNotFoundHandler(answerNotFound)
  return answerNotFound
}

/** The issues of a request, with its body as a whole under the name its route gives it (`bodyResource`). */
function namingBody(request: FastifyRequest, issues: readonly Issue[]): readonly Issue[] {
  const name = request.routeOptions.config?.bodyResource
  return name === undefined ? issues : issues.map((issue) => (issue.resource === 'body' ? { ...issue, resource: name } : issue))
}

/** Answers a request no route took: 405 with `Allow` for a known path under another method, 404 otherwise. */
export type NotFoundHandler = (request: FastifyRequest, reply: FastifyReply) => void
