import { readFileSync } from 'node:fs'
import fastifySwagger from '@fastify/swagger'
import fastifySwaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchema, RouteOptions } from 'fastify'
import { SERVICE_VERSION as version } from '../version.ts'
import { componentSchemas, DocumentedFixtureBody, withComponentRefs } from './openapi-components.ts'
import { MAX_ATTRIBUTIONS_PER_CALL, MAX_USERS_PER_CALL } from '../imports/limits.ts'
import { MAX_ARCHIVED_PER_CALL } from '../v1/archive-users.ts'
import {
  ArchiveItemSchema,
  documentedBulkBody,
  GroupAttributionSchema,
  ManagerAttributionSchema,
  UserPayloadSchema,
} from './v1/import-schemas.ts'
import {
  missingBodyAsEmpty,
  ServerErrorBodySchema,
  ServiceUnavailableBodySchema,
  TooManyRequestsBodySchema,
  ValidationErrorBodySchema,
} from './schemas.ts'
import { MAX_PARAM_LENGTH } from './framework-errors.ts'

/** Examples by operationId, taken from a demo company by `npm run docs:openapi-examples`. */
const EXAMPLES = JSON.parse(readFileSync(new URL('./openapi-examples.json', import.meta.url), 'utf8')) as Record<
  string,
  { request?: unknown; response?: unknown }
>

const RATE_HEADERS = {
  'RateLimit-Limit': { type: 'integer', description: 'Requests allowed per window (one second)' },
  'RateLimit-Remaining': { type: 'integer', description: 'Requests left in the current window' },
  'RateLimit-Reset': { type: 'integer', description: 'Seconds until the window resets' },
}

const DESCRIPTIONS: Record<string, string> = {
  200: 'OK',
  201: 'Created',
  204: 'No content',
  400: 'A bad parameter or body: `resource` names it',
  401: 'Missing or unknown credentials',
  403: 'The company has not enabled the public API',
  404: 'Unknown route or id, or a sandbox id',
  408: 'Waited longer than the request allowed (`timeout_ms`): `resource` names what ran out',
  413: 'Request body over the limit (`BODY_LIMIT_MB`, 32 MiB by default; 2 MiB for the user, attribution and archive calls): `resource` is `body` (`data` on those calls)',
  414: `A path parameter over ${MAX_PARAM_LENGTH} characters: \`resource\` is \`path\``,
  429: "Over the rate limit, (upserts) the company's import queue is full, or (reads) too many of the company's reads wait for their turn on the instance: retry after `Retry-After` seconds",
  500: 'A fault of the service, logged with the request id',
  503: 'Not now: not ready (probes); a request that found the store busy past the wait or out of reach, or a write its disk full, nothing of it done (retry after `Retry-After`); a write the store went out of reach before confirming, which may have been done (no `Retry-After`: look before sending it again); a write to an instance older than the store (send it to one of the new version); or a fault set through the admin routes',
}

type Area = 'v1' | 'v2' | 'admin' | 'operations'
const isPublic = (area: Area) => area === 'v1' || area === 'v2'

/** The part of the interface a route belongs to, by its path. */
function areaOf(url: string): Area {
  if (url.startsWith('/v1/')) return 'v1'
  if (url.startsWith('/v2/')) return 'v2'
  if (url.startsWith('/admin/')) return 'admin'
  return 'operations'
}

const RETRY_AFTER = { 'Retry-After': { type: 'integer', description: 'Seconds to wait before retrying' } }
const UNAVAILABLE_RETRY_AFTER = {
  'Retry-After': {
    type: 'integer',
    description: 'Seconds to wait before retrying; absent where the request may have been done, or waits for an operator',
  },
}

type ResponseSchemas = Record<string, { description?: string; [keyword: string]: unknown }>

const DEPRECATION_HEADERS = {
  Deprecation: { type: 'string', description: '`true`: the route is deprecated (no removal date is announced)' },
}
const SUCCESSOR_HEADER = {
  Link: { type: 'string', description: 'The v2 route that replaces this one: `<URL>; rel="successor-version"`' },
}

/**
 * Bodies the document shows though the route checks them itself: a fixture (for errors listed with their JSON
 * paths), the items of the users' calls (each checked on its own, so that one bad item is reported with the others).
 */
const DOCUMENTED_BODIES: Record<string, unknown> = {
  'POST /admin/companies': DocumentedFixtureBody,
  'PUT /v1/users/bulk': documentedBulkBody(MAX_USERS_PER_CALL, UserPayloadSchema),
  'PUT /v1/users/managers/bulk': documentedBulkBody(MAX_ATTRIBUTIONS_PER_CALL, ManagerAttributionSchema),
  'PUT /v1/users/groups/bulk': documentedBulkBody(MAX_ATTRIBUTIONS_PER_CALL, GroupAttributionSchema),
  'DELETE /v1/users/archive/bulk': documentedBulkBody(MAX_ARCHIVED_PER_CALL, ArchiveItemSchema),
}

/**
 * The headers of a response: rate limit on public routes, `Retry-After` on a 429 and on a busy store's 503,
 * `Deprecation` (and `Link` on success) on deprecated routes.
 */
function headersOf(status: string, area: Area, deprecated: boolean): Record<string, unknown> | undefined {
  // Answered before any route is found (framework-errors.ts): no rate limit counts it, no route's header is set.
  if (status === '414') return undefined
  const headers = {
    ...(isPublic(area) ? RATE_HEADERS : {}),
    ...(status === '429' ? RETRY_AFTER : {}),
    ...(status === '503' && area !== 'operations' ? UNAVAILABLE_RETRY_AFTER : {}),
    ...(deprecated ? DEPRECATION_HEADERS : {}),
    ...(deprecated && status.startsWith('2') ? SUCCESSOR_HEADER : {}),
  }
  return Object.keys(headers).length > 0 ? headers : undefined
}

/**
 * Completes a route's schema for the document: its tag and security by area, a description for each
 * response, the answers every route can give whatever its own schema says (public ones: 429 from the rate limiter,
 * 500; v1, v2 and admin: 503 when the store stays busy; 413 where a body is read (every method but GET and HEAD); 414 where a path has a
 * parameter), the headers of each answer, and references to the shared components in
 * place of their inline copies. The route's own schema is not changed.
 */
function documentRoute({ schema, url, route }: { schema: FastifySchema; url: string; route: RouteOptions }): {
  schema: FastifySchema
  url: string
} {
  const area = areaOf(url)
  const deprecated = (schema as { deprecated?: boolean } | undefined)?.deprecated === true
  const responses: ResponseSchemas = { ...(schema?.response as ResponseSchemas | undefined) }
  if (isPublic(area)) {
    responses[429] ??= { ...TooManyRequestsBodySchema }
    responses[500] ??= { ...ServerErrorBodySchema }
  }
  if (area !== 'operations') responses[503] ??= { ...ServiceUnavailableBodySchema }
  if (url.includes('/:')) responses[414] ??= { ...ValidationErrorBodySchema }
  const body = DOCUMENTED_BODIES[`${String(route.method)} ${url}`] ?? schema?.body
  // Fastify reads and bounds the body of every method but GET and HEAD, a route that expects none included (the
  // admin deletions): sent one over the limit, it answers 413 too.
  if (body || readsBody(route.method)) responses[413] ??= { ...ValidationErrorBodySchema }
  for (const [status, response] of Object.entries(responses)) {
    const described = {
      ...(withComponentRefs(response) as object),
      description: response.description ?? DESCRIPTIONS[status] ?? 'Response',
    }
    const headers = headersOf(status, area, deprecated)
    responses[status] = headers ? { ...described, headers } : described
  }
  const security = isPublic(area) ? [{ ApiKey: [] }] : area === 'admin' ? [{ AdminToken: [] }] : []
  const documented = { ...schema, tags: [area], security, response: responses, ...(body ? { body: withComponentRefs(body) } : {}) }
  return { url, schema: documented as FastifySchema }
}

interface OpenApiOperation {
  operationId?: string
  requestBody?: { required?: boolean; content?: Record<string, { example?: unknown }> }
  responses?: Record<string, { content?: Record<string, { example?: unknown }> }>
}

/** Puts the examples of each operation on its JSON request body and its 200 answer. */
function withExamples<Document extends { paths?: Record<string, Record<string, OpenApiOperation>> }>(document: Document): Document {
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      const example = operation.operationId ? EXAMPLES[operation.operationId] : undefined
      if (!example) continue
      const requestMedia = operation.requestBody?.content?.['application/json']
      if (requestMedia && example.request !== undefined) requestMedia.example = example.request
      const responseMedia = operation.responses?.['200']?.content?.['application/json']
      if (responseMedia && example.response !== undefined) responseMedia.example = example.response
    }
  }
  return document
}

/**
 * Marks as optional the request bodies of `operationIds`: @fastify/swagger marks every body schema required, and
 * the routes that read a missing body as `{}` (`missingBodyAsEmpty`) take none.
 */
function withOptionalBodies<Document extends { paths?: Record<string, Record<string, OpenApiOperation>> }>(
  document: Document,
  operationIds: ReadonlySet<string>,
): Document {
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      if (operation.requestBody && operation.operationId && operationIds.has(operation.operationId)) operation.requestBody.required = false
    }
  }
  return document
}

/** True when Fastify reads a request body for the route's method, whatever the route's schema. */
const readsBody = (method: RouteOptions['method']) => [method].flat().some((name) => name !== 'GET' && name !== 'HEAD')

/** True when the route reads a missing body as `{}`. */
function takesMissingBody(route: RouteOptions): boolean {
  return [route.preValidation ?? []].flat().includes(missingBodyAsEmpty as never)
}

/**
 * The reading page runs only its own scripts, and no other site may frame it (clickjacking). Its "Try it out"
 * calls the service: its own origin, or PUBLIC_URL's. Inline styles stay allowed: Swagger UI sets some. Not the plugin's default policy: its
 * `upgrade-insecure-requests` sends a page served over plain HTTP (a LAN host, a container) for its scripts over
 * HTTPS, where nothing answers.
 */
function documentationPagePolicy(publicUrl: string | null): Record<string, string> {
  return {
    'default-src': "'self'",
    'connect-src': publicUrl ? `'self' ${new URL(publicUrl).origin}` : "'self'",
    'base-uri': "'self'",
    'object-src': "'none'",
    'script-src': "'self'",
    'script-src-attr': "'none'",
    'style-src': "'self' 'unsafe-inline'",
    'img-src': "'self' data:",
    'frame-ancestors': "'none'",
    'form-action': "'self'",
  }
}

/**
 * Generates the OpenAPI 3.1 document from the route schemas (`GET /openapi.json`) and serves a reading page
 * for it at `/docs`. Register before the routes, so that every route is seen.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  const optionalBodies = new Set<string>()
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      ...(app.config.publicUrl ? { servers: [{ url: app.config.publicUrl }] } : {}),
      info: {
        title: 'commission-api',
        version,
        description:
          "A self-hostable implementation of a commission platform's public API: the read-only v2 extraction interface and the v1 interface. " +
          'Every v1 and v2 call carries the `X-API-Key` header and counts against the rate limit of its company.',
      },
      tags: [
        { name: 'v2', description: 'Read-only extraction: discovery, field schemas, statements, records, quota values' },
        { name: 'v1', description: 'Users, data-table records, imports, deprecated reporting reads' },
        { name: 'operations', description: 'Health probes and metrics: no key, outside the rate limit' },
        { name: 'admin', description: 'Administration, present only when ADMIN_TOKEN is set: not part of the public interface' },
      ],
      components: {
        securitySchemes: {
          ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'The API key of a user of the company' },
          AdminToken: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' },
        },
        schemas: componentSchemas(),
      },
    },
    transform: (route) => {
      const operationId = (route.schema as { operationId?: string } | undefined)?.operationId
      if (operationId && takesMissingBody(route.route)) optionalBodies.add(operationId)
      return documentRoute(route)
    },
    transformObject: (documentObject) =>
      'openapiObject' in documentObject
        ? withOptionalBodies(withExamples(documentObject.openapiObject as Parameters<typeof withExamples>[0]), optionalBodies)
        : documentObject.swaggerObject,
  })

  // The document does not change while the process runs: its text is made at the first request rather than at each,
  // on a route that takes no key and counts against no rate limit (docs/performance.md, "The OpenAPI document's text
  // made once").
  let documentText: string | undefined
  app.get('/openapi.json', { schema: { hide: true } }, async (_request, reply) => {
    documentText ??= JSON.stringify(app.swagger())
    return reply.type('application/json; charset=utf-8').send(documentText)
  })
  // The service's root is its documentation.
  app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/docs'))

  await app.register(async (documentation) => {
    documentation.addHook('onRequest', refuseFramingAndSniffing)
    await documentation.register(fastifySwaggerUi, {
      routePrefix: '/docs',
      uiConfig: { url: '/openapi.json' },
      staticCSP: documentationPagePolicy(app.config.publicUrl),
    })
  })
}

async function refuseFramingAndSniffing(_request: FastifyRequest, reply: FastifyReply): Promise<void> {
  reply.header('x-frame-options', 'DENY')
  reply.header('x-content-type-options', 'nosniff')
}
