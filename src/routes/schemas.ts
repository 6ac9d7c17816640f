import type { FastifyRequest } from 'fastify'
import { type Static, Type } from 'typebox'
import { ObjectIdSchema } from '../domain/schemas.ts'
import { ErrorItemSchema } from '../domain/schemas.ts'

/**
 * Shapes shared by several routes (error bodies, their responses, admin parameters). Route-specific schemas live
 * beside their routes; the shapes services build, beside the services (docs/development.md).
 */

/** The body of a call that takes none: left out or `{}`. Any field sent is refused rather than ignored. */
export const NoBodySchema = Type.Object({}, { additionalProperties: false, description: 'None, or {}' })

/**
 * Fastify validates a missing body as `undefined`: a route whose body fields are all optional reads it as `{}`.
 * A JSON `null` is a body, and is refused as one that is not an object.
 */
export async function missingBodyAsEmpty(request: FastifyRequest): Promise<void> {
  if (request.body === undefined) request.body = {}
}

export const ValidationErrorBodySchema = Type.Object({
  count: Type.Integer(),
  errors: Type.Array(ErrorItemSchema),
})
export type ValidationErrorBody = Static<typeof ValidationErrorBodySchema>

export const UnauthorizedBodySchema = Type.Object({ message: Type.String(), type: Type.Literal('UnauthorizedError') })

export const ForbiddenBodySchema = Type.Object({
  message: Type.String(),
  type: Type.Literal('ForbiddenError'),
  error: Type.Literal('ForbiddenError'),
})

export const NotFoundBodySchema = Type.Object({
  message: Type.String(),
  resource: Type.String(),
  type: Type.Literal('NotFoundError'),
})

export const ServerErrorBodySchema = Type.Object({ message: Type.String(), type: Type.String() })

/** The service cannot serve the request now: a write found the store busy (`Retry-After`), or an injected fault. */
export const ServiceUnavailableBodySchema = Type.Object({ message: Type.String(), type: Type.Literal('ServiceUnavailableError') })

/** Over the rate limit, or an upsert over its company's import queue (`Retry-After` says when to come back). */
export const TooManyRequestsBodySchema = Type.Object({ message: Type.String(), type: Type.Literal('TooManyRequestsError') })

/** The error responses every authenticated route may give. */
export const AuthenticatedErrorResponses = {
  400: ValidationErrorBodySchema,
  401: UnauthorizedBodySchema,
  403: ForbiddenBodySchema,
  404: NotFoundBodySchema,
  429: TooManyRequestsBodySchema,
}

/** The error responses of the admin routes (behind `ADMIN_TOKEN`). */
export const AdminErrorResponses = { 400: ValidationErrorBodySchema, 401: UnauthorizedBodySchema, 404: NotFoundBodySchema }

/** The path parameters of an admin route about one company. */
export const CompanyParamsSchema = Type.Object({ id: ObjectIdSchema })
