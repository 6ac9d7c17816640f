import { Validator } from '@seriousme/openapi-schema-validator'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../src/app.ts'
import { ManualClock } from '../src/clock.ts'
import { loadConfig } from '../src/config.ts'
import { openTestStore } from './helpers/test-store.ts'
import type { Store } from '../src/store/port.ts'
import { call } from './helpers/server.ts'

/**
 * Every (method, path) the router holds, read from Fastify's own route tree (`printRoutes`), independently
 * of the OpenAPI generator. Paths in OpenAPI form: `:id` becomes `{id}`.
 */
function routerRoutes(app: FastifyInstance): Array<{ method: string; path: string }> {
  const routes: Array<{ method: string; path: string }> = []
  const prefixes: string[] = []
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│ ]*)(?:├── |└── )(.*?)(?: \(([A-Z, ]+)\))?$/.exec(line)
    if (!match) continue
    const depth = match[1].length / 4
    const path = (prefixes[depth - 1] ?? '') + match[2]
    prefixes[depth] = path
    for (const method of match[3]?.split(', ') ?? []) routes.push({ method, path: path.replace(/:(\w+)/g, '{$1}') })
  }
  return routes
}

/** Routes that are not operations of the service: HEAD twins, the documentation page and the document itself. */
const isDocumented = ({ method, path }: { method: string; path: string }) =>
  method !== 'HEAD' && path !== '/openapi.json' && !path.startsWith('/docs')

describe('OpenAPI document', () => {
  let app: FastifyInstance
  let store: Store
  let dispose: () => Promise<void>
  let url: string
  let document: any

  beforeAll(async () => {
    ;({ store, dispose } = await openTestStore())
    const config = loadConfig({ DEMO: 'off', LOG_LEVEL: 'silent', ADMIN_TOKEN: 'openapi-test-admin-token' })
    app = await buildApp({ config, store, clock: new ManualClock() })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const address = app.server.address()
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
    const reply = await call(`${url}/openapi.json`)
    if (reply.status !== 200) throw new Error(`GET /openapi.json answered ${reply.status}`)
    document = reply.body
  })
  afterAll(async () => {
    await app.close()
    await dispose()
  })

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(document.openapi).toBe('3.1.0')
    const result = await new Validator().validate(document)
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
  })

  it('describes every route the server has, with its method', () => {
    const routes = routerRoutes(app).filter(isDocumented)
    // The router reading is not empty: it sees the v1, v2, operations and admin routes.
    for (const path of ['/v1/users', '/v2/data-structures', '/health/ready', '/metrics', '/admin/companies']) {
      expect(routes.map((route) => route.path)).toContain(path)
    }
    const missing = routes.filter(({ method, path }) => !document.paths[path]?.[method.toLowerCase()])
    expect(missing).toEqual([])
  })

  it('declares the X-API-Key security scheme and requires it on every v1 and v2 operation', () => {
    expect(document.components.securitySchemes.ApiKey).toEqual({
      type: 'apiKey',
      in: 'header',
      name: 'X-API-Key',
      description: expect.any(String),
    })
    const operations = Object.entries(document.paths).flatMap(([path, methods]: [string, any]) =>
      Object.entries(methods).map(([method, operation]) => ({ path, method, operation: operation as any })),
    )
    const publicOperations = operations.filter(({ path }) => path.startsWith('/v1/') || path.startsWith('/v2/'))
    expect(publicOperations.length).toBeGreaterThan(10)
    for (const { path, method, operation } of publicOperations) {
      expect(operation.security, `${method} ${path}`).toEqual([{ ApiKey: [] }])
      for (const status of ['200', '400', '401', '403', '404', '429', '500']) {
        if (status === '200' && !operation.responses['200']) continue
        expect(operation.responses[status], `${method} ${path} ${status}`).toBeDefined()
      }
      expect(Object.keys(operation.responses[429].headers).toSorted(), `${method} ${path}`).toEqual([
        'RateLimit-Limit',
        'RateLimit-Remaining',
        'RateLimit-Reset',
        'Retry-After',
      ])
    }
    const probes = operations.filter(({ path }) => path.startsWith('/health/') || path === '/metrics')
    for (const { operation } of probes) expect(operation.security).toEqual([])
  })

  it('documents the error bodies of the specification', () => {
    const responses = document.paths['/v2/data-structures'].get.responses
    const body = (status: string) => responses[status].content['application/json'].schema
    expect(body('401')).toMatchObject({ required: ['message', 'type'], properties: { type: { enum: ['UnauthorizedError'] } } })
    expect(body('403').properties.error).toMatchObject({ enum: ['ForbiddenError'] })
    expect(body('404').required).toEqual(['message', 'resource', 'type'])
    expect(body('400').required).toEqual(['count', 'errors'])
    expect(body('429')).toMatchObject({ properties: { type: { enum: ['TooManyRequestsError'] } } })
  })

  it('serves a documentation page at /docs that reads /openapi.json', async () => {
    // Follow the redirects of the documentation plugin to its page.
    let address = `${url}/docs`
    let page = await call(address)
    for (let hops = 0; page.status === 302 && hops < 3; hops++) {
      address = new URL(String(page.headers.location), address).href
      page = await call(address)
    }
    expect(page.status).toBe(200)
    expect(page.headers['content-type']).toMatch(/text\/html/)
    expect(page.text).toContain('swagger-ui')
    const initializer = await call(`${url}/docs/static/swagger-initializer.js`)
    expect(initializer.text).toContain('/openapi.json')
  })
})
