import { readFileSync } from 'node:fs'
import fastifySwagger from '@fastify/swagger'
import fastifySwaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, FastifySchema } from 'fastify'
import { ServerErrorBodySchema, TooManyRequestsBodySchema } from './schemas.ts'

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }

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
  413: 'Request body over 10 MiB',
  429: "Over the rate limit, or (upserts) the company's import queue is full: retry after `Retry-After` seconds",
  500: 'A fault of the service, logged with the request id',
  503: 'Not ready',
}

/** The part of the interface a route belongs to, by its path. */
function areaOf(url: string): 'v1' | 'v2' | 'admin' | 'operations' {
  if (url.startsWith('/v1/')) return 'v1'
  if (url.startsWith('/v2/')) return 'v2'
  if (url.startsWith('/admin/')) return 'admin'
  return 'operations'
}

/** The rate-limit headers of a public route's answer: `Retry-After` too on a 429. */
const rateHeaders = (status: string) =>
  status === '429' ? { ...RATE_HEADERS, 'Retry-After': { type: 'integer', description: 'Seconds to wait before retrying' } } : RATE_HEADERS

type ResponseSchemas = Record<string, { description?: string; [keyword: string]: unknown }>

/**
 * Completes a route's schema for the document: its tag and security by area, a description for each
 * response, and the answers every public route can give whatever its own schema says (429 from the rate
 * limiter, 500), with the rate-limit headers. The route's own schema is not changed.
 */
function documentRoute({ schema, url }: { schema: FastifySchema; url: string }): { schema: FastifySchema; url: string } {
  const area = areaOf(url)
  const isPublic = area === 'v1' || area === 'v2'
  const responses: ResponseSchemas = { ...(schema?.response as ResponseSchemas | undefined) }
  if (isPublic) {
    responses[429] ??= { ...TooManyRequestsBodySchema }
    responses[500] ??= { ...ServerErrorBodySchema }
  }
  for (const [status, response] of Object.entries(responses)) {
    const described = { ...response, description: response.description ?? DESCRIPTIONS[status] ?? 'Response' }
    responses[status] = isPublic ? { ...described, headers: rateHeaders(status) } : described
  }
  const security = isPublic ? [{ ApiKey: [] }] : area === 'admin' ? [{ AdminToken: [] }] : []
  return { url, schema: { ...schema, tags: [area], security, response: responses } as FastifySchema }
}

/**
 * Generates the OpenAPI 3.1 document from the route schemas (`GET /openapi.json`) and serves a reading page
 * for it at `/docs`. Register before the routes, so that every route is seen.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'commission-api',
        version,
        description:
          'A self-hostable implementation of a commission platform\'s public API: the read-only v2 extraction interface and the v1 interface. ' +
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
      },
    },
    transform: documentRoute,
  })

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())

  await app.register(fastifySwaggerUi, { routePrefix: '/docs', uiConfig: { url: '/openapi.json' } })
}
