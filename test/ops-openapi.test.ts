import { Ajv2020 } from 'ajv/dist/2020.js'
import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { Validator } from '@seriousme/openapi-schema-validator'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../src/app.ts'
import { ManualClock } from '../src/clock.ts'
import { loadConfig } from '../src/config.ts'
import { openTestStore } from './helpers/test-store.ts'
import { exchange } from './helpers/raw-http.ts'
import { temporaryDirectory } from './helpers/temporary-directories.ts'
import { call, startTestServer } from './helpers/server.ts'

/** TypeScript's compiler, as `npm run typecheck` runs it. */
const TSC = resolve(import.meta.dirname, '../node_modules/typescript/bin/tsc')

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

/** Routes that are not operations of the service: HEAD twins, the documentation page, the document itself, and `/` (a redirect to the page). */
const isDocumented = ({ method, path }: { method: string; path: string }) =>
  method !== 'HEAD' && path !== '/openapi.json' && path !== '/' && !path.startsWith('/docs')

/** A schema with its `$ref` to a component followed. */
const resolved = (document: any, schema: any) => (schema?.$ref ? document.components.schemas[schema.$ref.split('/').at(-1)] : schema)

/** The application on an ephemeral port (admin routes on), and its OpenAPI document. */
async function startDocumented(env: Record<string, string> = {}) {
  const { store, dispose } = await openTestStore()
  const config = loadConfig({ DEMO: 'off', LOG_LEVEL: 'silent', ADMIN_TOKEN: 'openapi-test-admin-token', ...env })
  const app = await buildApp({ config, store, clock: new ManualClock() })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  const reply = await call(`${url}/openapi.json`)
  if (reply.status !== 200) throw new Error(`GET /openapi.json answered ${reply.status}`)
  return { app, dispose, url, document: reply.body }
}

describe('OpenAPI document', () => {
  let app: FastifyInstance
  let dispose: () => Promise<void>
  let url: string
  let document: any

  beforeAll(async () => {
    ;({ app, dispose, url, document } = await startDocumented())
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
        ...(operation.deprecated ? ['Deprecation'] : []),
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
    const body = (status: string) => resolved(document, responses[status].content['application/json'].schema)
    expect(body('401')).toMatchObject({ required: ['message', 'type'], properties: { type: { enum: ['UnauthorizedError'] } } })
    expect(body('403').properties.error).toMatchObject({ enum: ['ForbiddenError'] })
    expect(body('404').required).toEqual(['message', 'resource', 'type'])
    expect(body('400').required).toEqual(['count', 'errors'])
    expect(body('429')).toMatchObject({ properties: { type: { enum: ['TooManyRequestsError'] } } })
  })

  it('serves the same document, as JSON, at every request', async () => {
    const again = await call(`${url}/openapi.json`)
    expect(again.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(again.body).toEqual(document)
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

  it("answers what the documentation's files cannot serve with its own status, in the specification's bodies", async () => {
    const unsatisfiable = await call(`${url}/docs/static/swagger-ui.css`, { headers: { range: 'bytes=99999999-' } })
    expect(unsatisfiable.status).toBe(416)
    expect(unsatisfiable.body).toEqual({
      count: 1,
      errors: [{ error: 'ValidationError', resource: 'request', description: expect.any(String) }],
    })
    const precondition = await call(`${url}/docs/static/swagger-ui.css`, { headers: { 'if-match': '"not-this-one"' } })
    expect(precondition.status).toBe(412)
    expect(precondition.body.errors[0].resource).toBe('request')
    // Sent on a socket as written: an HTTP client's URL parser would resolve the dots before the request leaves.
    const outside = await exchange(
      url,
      'GET /docs/static/%2e%2e/%2e%2e/package.json HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
    )
    expect(outside.split('\r\n')[0]).toBe('HTTP/1.1 403 Forbidden')
    expect(JSON.parse(outside.slice(outside.indexOf('\r\n\r\n') + 4))).toEqual({
      message: expect.any(String),
      type: 'ForbiddenError',
      error: 'ForbiddenError',
    })
  })

  it('keeps the documentation page from being framed, sniffed or made to run foreign scripts', async () => {
    for (const path of ['/docs', '/docs/static/swagger-initializer.js']) {
      const answer = await call(`${url}${path}`)
      expect(answer.headers['x-frame-options']).toBe('DENY')
      expect(answer.headers['x-content-type-options']).toBe('nosniff')
      const policy = String(answer.headers['content-security-policy'])
      expect(policy).toContain("script-src 'self';")
      expect(policy).toContain("frame-ancestors 'none'")
      // A page served over plain HTTP must still load its scripts.
      expect(policy).not.toContain('upgrade-insecure-requests')
    }
  })

  it("lets the documentation page's calls reach PUBLIC_URL when the service is read elsewhere", async () => {
    const behindProxy = await startTestServer({ PUBLIC_URL: 'https://api.example.com/base' })
    try {
      const page = await call(`${behindProxy.url}/docs`)
      expect(page.headers['content-security-policy']).toContain("connect-src 'self' https://api.example.com;")
    } finally {
      await behindProxy.close()
    }
  })
})

/** Every operation of the document, with its path and method. */
function operationsOf(document: any): Array<{ path: string; method: string; operation: any }> {
  return Object.entries(document.paths).flatMap(([path, methods]: [string, any]) =>
    Object.entries(methods).map(([method, operation]) => ({ path, method, operation: operation as any })),
  )
}

describe('OpenAPI document for client generators and readers', () => {
  let app: FastifyInstance
  let dispose: () => Promise<void>
  let url: string
  let document: any

  beforeAll(async () => {
    ;({ app, dispose, url, document } = await startDocumented({ PUBLIC_URL: 'https://api.example.com' }))
  })
  afterAll(async () => {
    await app.close()
    await dispose()
  })

  it('names and describes every operation, each name once', () => {
    const operations = operationsOf(document)
    for (const { path, method, operation } of operations) {
      expect(operation.operationId, `${method} ${path}`).toMatch(/^[a-z][A-Za-z]+$/)
      expect(operation.description?.length, `${method} ${path}`).toBeGreaterThan(20)
    }
    const ids = operations.map(({ operation }) => operation.operationId)
    expect(new Set(ids).size).toBe(ids.length)
    expect(ids).toEqual(
      expect.arrayContaining([
        'listDataStructures',
        'getFields',
        'getStatements',
        'getRecords',
        'getQuotaValues',
        'listUsers',
        'upsertUsers',
        'upsertManagers',
        'upsertGroups',
        'archiveUsers',
        'listTableRecords',
        'upsertTableRecords',
        'getImport',
        'listReportingStatements',
        'listReportingRecords',
        'getMetrics',
      ]),
    )
  })

  it("shows the items of the users' calls, which the service checks one by one, and their examples have that shape", () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false })
    ajv.addSchema(document, 'openapi')
    // Custom attributes are a user's own keys: only the other items have none beside the listed ones.
    for (const [path, method, required, closed] of [
      ['/v1/users/bulk', 'put', ['email'], undefined],
      ['/v1/users/managers/bulk', 'put', ['user', 'manager'], false],
      ['/v1/users/groups/bulk', 'put', ['user', 'group_dimension', 'group'], false],
      ['/v1/users/archive/bulk', 'delete', ['user'], false],
    ] as const) {
      const media = document.paths[path][method].requestBody.content['application/json']
      const items = media.schema.properties.data.items
      expect(items.required, path).toEqual(required)
      expect(items.additionalProperties, path).toBe(closed)
    }
    const upsertUsers = document.paths['/v1/users/bulk'].put.requestBody.content['application/json']
    expect(upsertUsers.example.data.length).toBeGreaterThan(0)
    const validate = ajv.getSchema('openapi#/paths/~1v1~1users~1bulk/put/requestBody/content/application~1json/schema')!
    expect(validate(upsertUsers.example), JSON.stringify(validate.errors)).toBe(true)
  })

  it('promises no header on a 414, which is answered before any route is found', async () => {
    const operations = Object.values(document.paths).flatMap((item: any) => Object.values(item)) as any[]
    const with414 = operations.filter((operation) => operation.responses['414'])
    expect(with414.length).toBeGreaterThan(5)
    for (const operation of with414) expect(operation.responses['414'].headers, operation.operationId).toBeUndefined()
  })

  it('declares a 400 on every admin operation, which refuses a query parameter it does not name', () => {
    const admin = Object.entries(document.paths).filter(([path]) => path.startsWith('/admin'))
    expect(admin.length).toBeGreaterThan(10)
    for (const [path, item] of admin) {
      for (const [method, operation] of Object.entries(item as Record<string, any>)) {
        expect(operation.responses['400'], `${method} ${path}`).toEqual(
          expect.objectContaining({ content: { 'application/json': { schema: { $ref: '#/components/schemas/ValidationErrorBody' } } } }),
        )
      }
    }
  })

  it("describes the revocation of a key: its path's two ids and every answer it gives", () => {
    const operation = document.paths['/admin/companies/{id}/api-keys/{key_id}'].delete
    expect(operation.operationId).toBe('adminDeleteApiKey')
    expect(operation.parameters.filter((parameter: any) => parameter.in === 'path').map((parameter: any) => parameter.name)).toEqual([
      'id',
      'key_id',
    ])
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['204', '400', '401', '404']))
    expect(operation.responses['404'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/NotFoundBody' })
  })

  it('marks the body optional where the route takes none, and required elsewhere', () => {
    const operations = Object.values(document.paths).flatMap((item: any) => Object.values(item)) as any[]
    const byId = (operationId: string) => operations.find((operation) => operation.operationId === operationId)
    const deletions = [
      'adminDeleteCompany',
      'adminDeleteApiKey',
      'adminDeletePlan',
      'adminClearFaults',
      'adminDeleteFault',
      'adminClearRequests',
    ]
    for (const operationId of ['adminCreateApiKey', 'adminResetCompany', 'adminResetEverything', 'adminDrainImports', ...deletions]) {
      expect(byId(operationId).requestBody.required, operationId).toBe(false)
    }
    for (const operationId of ['adminCreatePlan', 'adminSetExchangeRates', 'upsertUsers']) {
      expect(byId(operationId).requestBody.required, operationId).toBe(true)
    }
  })

  it('refers to component schemas for rows, pages, errors and imports instead of repeating them', () => {
    const schemas = document.components.schemas
    for (const name of [
      'StatementPage',
      'RecordPage',
      'QuotaValuePage',
      'PageMeta',
      'StatementRow',
      'RecordRow',
      'QuotaValueRow',
      'Amount',
      'UserReference',
      'DataStructureList',
      'FieldSchema',
      'UserPage',
      'ValidationErrorBody',
      'UnauthorizedBody',
      'NotFoundBody',
      'ImportReceipt',
      'ImportView',
      'Fixture',
    ]) {
      expect(schemas[name], name).toBeDefined()
    }
    expect(schemas.QuotaValuePage.properties.meta).toEqual({ $ref: '#/components/schemas/PageMeta' })
    expect(schemas.QuotaValuePage.properties.data.items).toEqual({ $ref: '#/components/schemas/QuotaValueRow' })
    expect(schemas.StatementRow.properties['standard.total_commission'].anyOf).toContainEqual({ $ref: '#/components/schemas/Amount' })
    const responses = document.paths['/v2/quotas/{quota_id}/values'].get.responses
    expect(responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/QuotaValuePage' })
    expect(responses['400'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ValidationErrorBody' })
    expect(document.paths['/v1/imports/{import_id}'].get.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/ImportView',
    })
    // No copy of the 400 body is left inline anywhere.
    const text = JSON.stringify(document.paths)
    expect(text).not.toContain('"required":["count","errors"]')
  })

  it('shows examples taken from the demo company, and they have the documented shapes', async () => {
    const { Value } = await import('typebox/value')
    const { QuotaValuePageSchema, RecordPageSchema, StatementPageSchema } = await import('../src/v2/pages.ts')
    const { DataStructureListSchema } = await import('../src/v2/data-structures.ts')
    const { FieldSchemaSchema } = await import('../src/v2/schemas.ts')
    const { ImportReceiptSchema } = await import('../src/imports/enqueue.ts')
    const { ImportAnswerSchema } = await import('../src/routes/v1/import-schemas.ts')
    const { offsetPageSchema } = await import('../src/v1/offset-page.ts')
    const { V1UserSchema } = await import('../src/v1/user-rows.ts')
    const { V1StatementRowSchema, V1RecordRowSchema } = await import('../src/v1/reporting.ts')
    const { V1RecordSchema } = await import('../src/v1/table-records.ts')
    const shapes: Record<string, unknown> = {
      listDataStructures: DataStructureListSchema,
      getFields: FieldSchemaSchema,
      getStatements: StatementPageSchema,
      getRecords: RecordPageSchema,
      getQuotaValues: QuotaValuePageSchema,
      listUsers: offsetPageSchema(V1UserSchema),
      listTableRecords: offsetPageSchema(V1RecordSchema),
      listReportingStatements: offsetPageSchema(V1StatementRowSchema),
      listReportingRecords: offsetPageSchema(V1RecordRowSchema),
      upsertUsers: ImportReceiptSchema,
      upsertTableRecords: ImportReceiptSchema,
      getImport: ImportAnswerSchema,
    }
    const byId = new Map(operationsOf(document).map(({ operation }) => [operation.operationId, operation]))
    for (const [operationId, shape] of Object.entries(shapes)) {
      const example = byId.get(operationId).responses['200'].content['application/json'].example
      expect(example, operationId).toBeDefined()
      expect(
        Value.Check(shape as any, example),
        `${operationId}: ${JSON.stringify([...Value.Errors(shape as any, example)].slice(0, 2))}`,
      ).toBe(true)
    }
    expect(byId.get('getStatements').responses['200'].content['application/json'].example.data[0]['standard.user'].email).toMatch(
      /@demo\.example$/,
    )
    expect(byId.get('upsertUsers').requestBody.content['application/json'].example.data[0].email).toMatch(/@demo\.example$/)
  })

  it('lists every status a route answers: 413 where a body is read; Deprecation and Link on deprecated routes', () => {
    const readingBodies = operationsOf(document).filter(({ operation }) => operation.requestBody)
    expect(readingBodies.length).toBeGreaterThan(5)
    expect(readingBodies.filter(({ operation }) => !operation.responses['413']).map(({ path, method }) => `${method} ${path}`)).toEqual([])
    // Fastify reads the body of a deletion too, though the route takes none.
    const deletions = operationsOf(document).filter(({ method }) => method === 'delete')
    expect(deletions.filter(({ operation }) => !operation.responses['413']).map(({ path }) => path)).toEqual([])
    const deprecated = operationsOf(document).filter(({ operation }) => operation.deprecated)
    expect(deprecated.map(({ path }) => path).toSorted()).toEqual([
      '/v1/reporting',
      '/v1/reporting/statements',
      '/v1/reporting/{data_table_id}/records',
    ])
    for (const { operation } of deprecated) {
      for (const [status, response] of Object.entries(operation.responses) as Array<[string, any]>) {
        if (status === '414') continue // answered before the route is found (below)
        expect(response.headers.Deprecation, status).toBeDefined()
        expect(response.headers.Link !== undefined, status).toBe(status === '200')
      }
    }
  })

  it('documents /metrics as text, the admin fixture body as the fixture schema, and servers from PUBLIC_URL', async () => {
    expect(Object.keys(document.paths['/metrics'].get.responses['200'].content)).toEqual(['text/plain; version=0.0.4; charset=utf-8'])
    const metrics = await call(`${url}/metrics`)
    expect(metrics.headers['content-type']).toMatch(/^text\/plain/)
    expect(document.paths['/admin/companies'].post.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/Fixture',
    })
    expect(document.components.schemas.Fixture.properties.company).toBeDefined()
    expect(document.servers).toEqual([{ url: 'https://api.example.com' }])
  })

  it('redirects / to the documentation page', async () => {
    const root = await call(`${url}/`)
    expect(root.status).toBe(302)
    expect(root.headers.location).toBe('/docs')
  })

  it('generates a typed client with openapi-typescript, and a call with it type-checks', async () => {
    const { default: openapiTS } = await import('openapi-typescript')
    const dir = temporaryDirectory('commission-api-openapi-')
    writeFileSync(join(dir, 'api.ts'), await openapiTS(document))
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: 'es2024',
          lib: ['es2024'],
          module: 'nodenext',
          moduleResolution: 'nodenext',
          allowImportingTsExtensions: true,
          types: [],
        },
        files: ['call.ts'],
      }),
    )
    const callFile = `import type { components, operations, paths } from './api.ts'
type Statements = paths['/v2/reporting/{table_id}/statements']['get']
type Query = NonNullable<Statements['parameters']['query']>
type StatementPage = Statements['responses'][200]['content']['application/json']
declare function get<T>(path: string, query: Query): Promise<T>
export async function rowIds(tableId: Statements['parameters']['path']['table_id']): Promise<string[]> {
  const page = await get<StatementPage>(\`/v2/reporting/\${tableId}/statements\`, { limit: 100, last_modified_after: '2026-01-01T00:00:00Z' })
  const next: string | null = page.meta.next_url
  const receipt: operations['upsertUsers']['responses'][200]['content']['application/json'] = { import_id: 'i', objects_imported: 1 }
  const missing: components['schemas']['NotFoundBody'] = { message: 'm', resource: 'table', type: 'NotFoundError' }
  // @ts-expect-error limit is a number
  const wrong: Query = { limit: 'many' }
  return [...page.data.map((row) => String(row['standard.id'])), next ?? '', receipt.import_id, missing.type, String(wrong)]
}
`
    writeFileSync(join(dir, 'call.ts'), callFile)
    const checked = spawnSync(process.execPath, [TSC, '-p', join(dir, 'tsconfig.json')], { encoding: 'utf8' })
    expect(checked.status, checked.stdout + checked.stderr).toBe(0)
    // The check has teeth: a call that misuses a generated type fails it.
    writeFileSync(
      join(dir, 'call.ts'),
      callFile.replace('const next: string | null = page.meta.next_url', 'const next: number = page.meta.next_url'),
    )
    const refused = spawnSync(process.execPath, [TSC, '-p', join(dir, 'tsconfig.json')], { encoding: 'utf8' })
    expect(refused.status).not.toBe(0)
    expect(refused.stdout).toContain('call.ts')
  })
})
