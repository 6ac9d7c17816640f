import { Ajv2020 } from 'ajv/dist/2020.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type KitServer, startKitServer, until } from './helpers/kit-server.ts'
import type { Reply } from './helpers/server.ts'

/**
 * The OpenAPI document against the server's real answers: each answer below, success or refusal, must have its
 * status declared for its operation and a body that the declared schema accepts. The document is read as a
 * client generator reads it, with a JSON Schema 2020-12 validator, not from the route's TypeBox schemas.
 */

let server: KitServer
let document: any
let ajv: Ajv2020

beforeAll(async () => {
  server = await startKitServer()
  document = (await server.call('/openapi.json')).body
  // The document is not a schema itself: loaded as one (keywords of OpenAPI left alone), its parts are referred to
  // by JSON pointer, and its `#/components/schemas/…` references resolve inside it.
  ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false })
  ajv.addSchema(document, 'openapi')
})
afterAll(() => server.close())

const pointer = (...parts: string[]) => parts.map((part) => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')

/** Checks one real answer against what the document declares for `method template` and the answer's status. */
function expectDeclared(reply: Reply, method: string, template: string): void {
  const label = `${method} ${template} → ${reply.status}`
  const operation = document.paths[template]?.[method.toLowerCase()]
  expect(operation, `${method} ${template} is documented`).toBeDefined()
  const response = operation.responses[String(reply.status)]
  expect(response, `${label} is declared`).toBeDefined()
  // Every answer below is JSON: its declaration must say so, with a schema.
  expect(response.content?.['application/json']?.schema, `${label} has a JSON body`).toBeDefined()
  const validate = ajv.getSchema(
    `openapi#/${pointer('paths', template, method.toLowerCase(), 'responses', String(reply.status))}/content/application~1json/schema`,
  )
  expect(validate, label).toBeDefined()
  expect(validate!(reply.body), `${label}: ${JSON.stringify(validate!.errors?.slice(0, 3))}`).toBe(true)
}

describe('the OpenAPI document against real answers', () => {
  it('declares the answers of the v2 reads, successes and refusals', async () => {
    const discovery = await server.api('/v2/data-structures')
    expectDeclared(discovery, 'GET', '/v2/data-structures')
    const byType = (type: string) => discovery.body.data.find((structure: { type: string }) => structure.type === type).id
    const routes = [
      ['/v2/data-structures/{table_id}/fields', `/v2/data-structures/${byType('statement_reporting')}/fields`],
      ['/v2/reporting/{table_id}/statements', `/v2/reporting/${byType('statement_reporting')}/statements?limit=3`],
      ['/v2/reporting/{table_id}/records', `/v2/reporting/${byType('record_reporting')}/records?limit=3`],
      ['/v2/quotas/{quota_id}/values', `/v2/quotas/${byType('quota')}/values?limit=3`],
    ]
    for (const [template, path] of routes) {
      const reply = await server.api(path)
      expect(reply.status, path).toBe(200)
      expectDeclared(reply, 'GET', template)
      if (!path.includes('?limit=')) continue
      const refused = await server.api(`${path.split('?')[0]}?limit=abc`)
      expect(refused.status, path).toBe(400)
      expectDeclared(refused, 'GET', template)
    }
    expectDeclared(await server.api('/v2/reporting/000000000000000000000000/statements'), 'GET', '/v2/reporting/{table_id}/statements')
    expectDeclared(await server.call('/v2/data-structures'), 'GET', '/v2/data-structures')
    const overLong = await server.api(`/v2/reporting/${'a'.repeat(150)}/statements`)
    expect(overLong.status).toBe(414)
    expectDeclared(overLong, 'GET', '/v2/reporting/{table_id}/statements')
  })

  it('declares a statement whose figures cannot be stated, its total null', async () => {
    const [company] = (await server.admin('/admin/companies')).body.data
    const ratesPath = `/admin/companies/${company.id}/exchange-rates`
    const { exchange_rates: rates } = (await server.admin(ratesPath, { method: 'PUT', body: {} })).body
    try {
      const discovery = await server.api('/v2/data-structures')
      const table = discovery.body.data.find((structure: { type: string }) => structure.type === 'statement_reporting').id
      const page = await server.api(`/v2/reporting/${table}/statements`)
      expect(page.body.data.some((row: Record<string, unknown>) => row['standard.total_commission'] === null)).toBe(true)
      expectDeclared(page, 'GET', '/v2/reporting/{table_id}/statements')
    } finally {
      await server.admin(ratesPath, { method: 'PUT', body: rates })
    }
  })

  it('declares a 503, as a fault answers it and as a busy store would', async () => {
    const fault = await server.admin(`/admin/companies/${server.demoId}/faults`, {
      method: 'POST',
      body: { method: 'get', path: '/v1/users', status: 503, times: 1 },
    })
    expect(fault.status).toBe(201)
    const unavailable = await server.api('/v1/users?limit=1')
    expect(unavailable.status).toBe(503)
    expectDeclared(unavailable, 'GET', '/v1/users')
    const retryAfter = document.paths['/v1/users/bulk'].put.responses['503'].headers['Retry-After']
    expect(retryAfter).toMatchObject({ schema: { type: 'integer' } })
  })

  it('declares the answers of the v1 writes and reads, and of an import', async () => {
    const users = await server.api('/v1/users?limit=2')
    expectDeclared(users, 'GET', '/v1/users')
    const records = await server.api('/v1/tables/deals/records?limit=2')
    expect(records.status).toBe(200)
    expectDeclared(records, 'GET', '/v1/tables/{data_table_key}/records')
    const email = users.body.data[0].email
    const upsert = await server.api('/v1/users/bulk', { method: 'PUT', body: { data: [{ email, name: 'Renamed' }] } })
    expect(upsert.status).toBe(200)
    expectDeclared(upsert, 'PUT', '/v1/users/bulk')
    const finished = await until(
      () => server.api(`/v1/imports/${upsert.body.import_id}`),
      (reply) => reply.body.status === 'finished',
    )
    expectDeclared(finished, 'GET', '/v1/imports/{import_id}')
    const archive = await server.api('/v1/users/archive/bulk', { method: 'DELETE', body: { data: [{ email: 'nobody@demo.example' }] } })
    expectDeclared(archive, 'DELETE', '/v1/users/archive/bulk')
    expectDeclared(await server.api('/v1/reporting?limit=2'), 'GET', '/v1/reporting')
    expectDeclared(await server.api('/v1/imports/000000000000000000000000'), 'GET', '/v1/imports/{import_id}')
  })

  it('declares the 413 of a deletion sent a body over the limit, though it takes no body', async () => {
    const small = await startKitServer({ BODY_LIMIT_MB: '1' })
    try {
      const over = await small.admin(`/admin/companies/${small.demoId}/faults`, {
        method: 'DELETE',
        body: { padding: 'x'.repeat(1024 * 1024) },
      })
      expect(over.status).toBe(413)
      expectDeclared(over, 'DELETE', '/admin/companies/{id}/faults')
    } finally {
      await small.close()
    }
  })

  it("declares the admin plans' answers: a plan as read, and as sent back", async () => {
    const plans = await server.admin(`/admin/companies/${server.demoId}/plans`)
    expect(plans.status).toBe(200)
    expect(plans.body.data.length).toBeGreaterThan(0)
    expectDeclared(plans, 'GET', '/admin/companies/{id}/plans')
    const plan = plans.body.data[0]
    const replaced = await server.admin(`/admin/companies/${server.demoId}/plans/${plan.id}`, { method: 'PUT', body: plan })
    expect(replaced.status).toBe(200)
    expectDeclared(replaced, 'PUT', '/admin/companies/{id}/plans/{plan_id}')
  })
})
