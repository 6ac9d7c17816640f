import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { plannedFixture, smallFixture } from './helpers/fixtures.ts'
import { call, startTestServer, type TestServer } from './helpers/server.ts'
import { openTestStore } from './helpers/test-store.ts'
import { createCompanyKey } from '../src/admin/company-admin.ts'
import {
  changeQuotaType,
  reviseCommissionLine,
  reviseMetric,
  reviseQuotaValue,
  reviseStatement,
  reviseStructure,
} from '../src/admin/data-edits.ts'
import { deletePlan, savePlan, setExchangeRates } from '../src/admin/plans.ts'
import { buildApp } from '../src/app.ts'
import { ManualClock } from '../src/clock.ts'
import { loadConfig } from '../src/config.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import type { FixturePlan } from '../src/fixtures/schema.ts'
import type { Store } from '../src/store/port.ts'

const TOKEN = 'admin-token-for-the-tests'
const admin = { authorization: `Bearer ${TOKEN}` }

describe('admin routes', () => {
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer({ ADMIN_TOKEN: TOKEN }, {}, { transport: 'inject' })
  })
  afterAll(() => server.close())

  it('exist only when ADMIN_TOKEN is set', async () => {
    const without = await startTestServer({}, {}, { transport: 'inject' })
    try {
      const reply = await without.call('/admin/companies', { method: 'POST', headers: admin, body: smallFixture() })
      expect(reply.status).toBe(404)
      expect(reply.body.type).toBe('NotFoundError')
    } finally {
      await without.close()
    }
  })

  it.each([
    ['missing', {}],
    ['wrong', { authorization: 'Bearer not-the-token' }],
    ['not bearer', { authorization: TOKEN }],
    ['another scheme', { authorization: `Basic ${TOKEN}` }],
    ['bearer with no token', { authorization: 'Bearer ' }],
    ['token with more after it', { authorization: `Bearer ${TOKEN}x` }],
  ])('401 with a %s token', async (_case, headers) => {
    const reply = await server.call('/admin/companies', { method: 'POST', headers, body: smallFixture() })
    expect(reply.status).toBe(401)
    expect(reply.body).toEqual({ message: expect.any(String), type: 'UnauthorizedError' })
  })

  it.each([`bearer ${TOKEN}`, `BEARER ${TOKEN}`, `Bearer   ${TOKEN}`, `Bearer\t${TOKEN}`])(
    'reads the scheme in any letter case, with any spaces or tabs after it (RFC 9110): %j',
    async (authorization) => {
      expect((await server.call('/admin/companies', { headers: { authorization } })).status).toBe(200)
    },
  )

  it('creates a company from a fixture, whose key then works', async () => {
    const reply = await server.call('/admin/companies', { method: 'POST', headers: admin, body: smallFixture('Initech') })
    expect(reply.status).toBe(201)
    expect(reply.body).toEqual({ company_id: expect.stringMatching(/^[0-9a-f]{24}$/), api_key: expect.any(String) })
    const listed = await server.call('/v2/data-structures', { key: reply.body.api_key })
    expect(listed.status).toBe(200)
    expect(listed.body.data).toHaveLength(5)
    const companies = await server.call('/admin/companies', { headers: admin })
    expect(companies.body.data).toContainEqual({ id: reply.body.company_id, name: 'Initech', public_api_enabled: true })
    expect((await server.call('/admin/companies')).status).toBe(401)
  })

  it('reports every fixture error with its JSON path', async () => {
    const fixture = smallFixture('Broken') as any
    fixture.users[1].email = 'not-an-email'
    fixture.statements[0].user = 'nobody@broken.example'
    fixture.quotas[0].values[0].period = '2026-Q1'
    const reply = await server.call('/admin/companies', { method: 'POST', headers: admin, body: fixture })
    expect(reply.status).toBe(400)
    // All in one pass: the schema problem, and the problems of the rest (the user with no valid email is none).
    expect(reply.body.errors).toEqual(
      expect.arrayContaining([
        { error: 'ValidationError', resource: '/users/1/email', description: expect.any(String) },
        { error: 'ValidationError', resource: '/statements/0/user', description: expect.any(String) },
        { error: 'ValidationError', resource: '/quotas/0/values/0/period', description: expect.any(String) },
      ]),
    )
    fixture.users[1].email = 'rep@broken.example'
    const second = await server.call('/admin/companies', { method: 'POST', headers: admin, body: fixture })
    expect(second.status).toBe(400)
    expect(second.body.count).toBe(2)
    expect(second.body.errors.map((error: { resource: string }) => error.resource)).toEqual([
      '/statements/0/user',
      '/quotas/0/values/0/period',
    ])
    expect((await server.store.companies.list()).some((company) => company.name === 'Broken')).toBe(false)
  })

  it('shows a company inventory, sandbox included', async () => {
    const created = await server.call('/admin/companies', { method: 'POST', headers: admin, body: smallFixture('Hooli') })
    const reply = await server.call(`/admin/companies/${created.body.company_id}`, { headers: admin })
    expect(reply.status).toBe(200)
    expect(reply.body.company).toMatchObject({ id: created.body.company_id, name: 'Hooli', public_api_enabled: true })
    expect(reply.body.users).toBe(3)
    expect(reply.body.api_keys).toHaveLength(2)
    expect(JSON.stringify(reply.body.api_keys)).not.toContain(created.body.api_key)
    const summary = reply.body.structures.map((item: any) => `${item.environment}:${item.type}:${item.name}:${item.total_records}`)
    expect(summary.toSorted()).toEqual(
      [
        'live:statement_reporting:Statements:3',
        'live:record_reporting:Deal commissions:2',
        'sandbox:statement_reporting:Sandbox statements:1',
        'sandbox:record_reporting:Sandbox deals:1',
        'live:quota:Monthly bookings:3',
        'live:quota:Quarterly attainment:1',
        'live:quota:Old target:1',
        'sandbox:quota:Sandbox quota:1',
        'live:data_table:Deals:2',
        'sandbox:data_table:Sandbox deals:1',
      ].toSorted(),
    )
  })

  it('creates API keys, for the first active user or a named one', async () => {
    const created = await server.call('/admin/companies', { method: 'POST', headers: admin, body: smallFixture('Umbrella') })
    const id = created.body.company_id
    const first = await server.call(`/admin/companies/${id}/api-keys`, { method: 'POST', headers: admin, body: {} })
    expect(first.status).toBe(201)
    expect((await server.call('/v2/data-structures', { key: first.body.api_key })).status).toBe(200)
    // Without a body at all, as `curl -X POST` sends it: the same as the empty one.
    const bodiless = await server.call(`/admin/companies/${id}/api-keys`, { method: 'POST', headers: admin })
    expect(bodiless.status).toBe(201)
    expect(bodiless.body.api_key).not.toBe(first.body.api_key)
    const unknownField = await server.call(`/admin/companies/${id}/api-keys`, { method: 'POST', headers: admin, body: { usr: 'x' } })
    expect(unknownField.status).toBe(400)
    const named = await server.call(`/admin/companies/${id}/api-keys`, {
      method: 'POST',
      headers: admin,
      body: { user: 'REP@umbrella.example' },
    })
    expect(named.status).toBe(201)
    const keys = await server.store.apiKeys.list(id)
    const rep = (await server.store.users.findByEmails(id, ['rep@umbrella.example'])).get('rep@umbrella.example')!
    expect(keys.at(-1)!.user_id).toBe(rep.id)
    const archived = await server.call(`/admin/companies/${id}/api-keys`, {
      method: 'POST',
      headers: admin,
      body: { user: 'gone@umbrella.example' },
    })
    expect(archived.status).toBe(400)
    const unknown = await server.call(`/admin/companies/${id}/api-keys`, {
      method: 'POST',
      headers: admin,
      body: { user: 'who@umbrella.example' },
    })
    expect(unknown.status).toBe(404)
    expect(unknown.body).toEqual({ message: expect.any(String), resource: 'user', type: 'NotFoundError' })
    // A user given but not an email is refused: it never falls back to the first active user.
    const before = (await server.store.apiKeys.list(id)).length
    for (const user of ['', null, ['rep@umbrella.example'], 7]) {
      const refused = await server.call(`/admin/companies/${id}/api-keys`, { method: 'POST', headers: admin, body: { user } })
      expect(refused.status, JSON.stringify(user)).toBe(400)
      expect(refused.body.errors).toEqual([expect.objectContaining({ resource: 'user' })])
    }
    expect(await server.store.apiKeys.list(id)).toHaveLength(before)
  })

  it('deletes a company and everything it had; its key stops working', async () => {
    const created = await server.call('/admin/companies', { method: 'POST', headers: admin, body: smallFixture('Doomed') })
    const id = created.body.company_id
    const reply = await server.call(`/admin/companies/${id}`, { method: 'DELETE', headers: admin })
    expect(reply.status).toBe(204)
    expect((await server.call('/v2/data-structures', { key: created.body.api_key })).status).toBe(401)
    expect(await server.store.users.count(id)).toBe(0)
    const again = await server.call(`/admin/companies/${id}`, { method: 'DELETE', headers: admin })
    expect(again.status).toBe(404)
    expect(again.body).toEqual({ message: expect.any(String), resource: 'company', type: 'NotFoundError' })
  })

  it('404 for an unknown company, 400 naming the parameter for a malformed id', async () => {
    const unknown = await server.call('/admin/companies/0123456789abcdef01234567', { headers: admin })
    expect(unknown.status).toBe(404)
    expect(unknown.body.resource).toBe('company')
    const malformed = await server.call('/admin/companies/not-an-id', { headers: admin })
    expect(malformed.status).toBe(400)
    expect(malformed.body).toEqual({ count: 1, errors: [{ error: 'ValidationError', resource: 'id', description: expect.any(String) }] })
  })

  it('400 naming an unknown query parameter, doing nothing: one meant to narrow an action is never dropped in silence', async () => {
    const kept = await server.call('/admin/companies', { method: 'POST', headers: admin, body: smallFixture('Narrowed') })
    const id = kept.body.company_id
    const before = await server.call(`/admin/companies/${id}`, { headers: admin })
    for (const [method, path] of [
      ['POST', `/admin/reset?company=${id}`],
      ['DELETE', `/admin/companies/${id}?confirm=no`],
      ['GET', `/admin/companies/${id}/requests?limit=1`],
      ['POST', `/admin/companies/${id}/imports/drain?timeout=5`],
      ['GET', '/admin/companies?name=Narrowed'],
    ] as const) {
      const refused = await server.call(path, { method, headers: admin })
      expect(refused.status, `${method} ${path}`).toBe(400)
      expect(refused.body.errors, `${method} ${path}`).toEqual([
        expect.objectContaining({
          error: 'ValidationError',
          description: expect.stringMatching(/unknown parameter (company|confirm|limit|timeout|name)/),
        }),
      ])
    }
    expect(await server.call(`/admin/companies/${id}`, { headers: admin })).toMatchObject({ status: 200, body: before.body })
    // The parameters a route names are still taken.
    expect((await server.call(`/admin/companies/${id}/imports?status=finished&limit=5`, { headers: admin })).status).toBe(200)
  })

  it('400 naming a field sent in the body of a deletion, doing nothing: none is ignored while the whole goes', async () => {
    const id = (await server.call('/admin/companies', { method: 'POST', headers: admin, body: plannedFixture('Bodied', ['2026-01-15']) }))
      .body.company_id
    const fault = { method: 'GET', path: '/v1/users', status: 503 }
    const faultId = (await server.call(`/admin/companies/${id}/faults`, { method: 'POST', headers: admin, body: fault })).body.id
    const planId = (await server.call(`/admin/companies/${id}`, { headers: admin })).body.plans[0].id
    const before = await server.call(`/admin/companies/${id}`, { headers: admin })
    for (const [path, body] of [
      [`/admin/companies/${id}/faults`, { id: faultId }],
      [`/admin/companies/${id}/faults/${faultId}`, { confirm: true }],
      [`/admin/companies/${id}/requests`, { method: 'GET' }],
      [`/admin/companies/${id}/plans/${planId}`, { keep_statements: true }],
      [`/admin/companies/${id}`, { confirm: true }],
    ] as const) {
      const refused = await server.call(path, { method: 'DELETE', headers: admin, body })
      expect(refused.status, path).toBe(400)
      expect(refused.body.errors, path).toEqual([
        expect.objectContaining({ error: 'ValidationError', description: expect.stringContaining(Object.keys(body)[0]) }),
      ])
    }
    expect(await server.call(`/admin/companies/${id}`, { headers: admin })).toMatchObject({ status: 200, body: before.body })
    expect((await server.call(`/admin/companies/${id}/faults`, { headers: admin })).body.count).toBe(1)
    // None, or {}, is taken.
    expect((await server.call(`/admin/companies/${id}/faults/${faultId}`, { method: 'DELETE', headers: admin, body: {} })).status).toBe(204)
    expect((await server.call(`/admin/companies/${id}`, { method: 'DELETE', headers: admin })).status).toBe(204)
  })

  it('400 for malformed JSON, a wrong content type, or an unknown body field', async () => {
    const badJson = await server.call('/admin/companies', { method: 'POST', headers: admin, body: '{"company": ' })
    expect(badJson.status).toBe(400)
    expect(badJson.body).toEqual({ count: 1, errors: [{ error: 'ValidationError', resource: 'body', description: expect.any(String) }] })
    const wrongType = await server.call('/admin/companies', {
      method: 'POST',
      headers: { ...admin, 'content-type': 'text/csv' },
      body: 'a,b',
    })
    expect(wrongType.status).toBe(400)
    expect(wrongType.body.errors[0].resource).toBe('Content-Type')
    const created = await server.call('/admin/companies', { method: 'POST', headers: admin, body: smallFixture('Strict') })
    const extra = await server.call(`/admin/companies/${created.body.company_id}/api-keys`, {
      method: 'POST',
      headers: admin,
      body: { owner: 'x' },
    })
    expect(extra.status).toBe(400)
    expect(extra.body.errors[0]).toMatchObject({ error: 'ValidationError', resource: 'owner' })
  })
})

/** `store`, on which another process deletes the company as soon as an admin write has found it, before it writes. */
function deletingOnceFound(store: Store, companyId: string): Store {
  return {
    ...store,
    companies: {
      ...store.companies,
      async get(id) {
        const company = await store.companies.get(id)
        if (id === companyId) await store.companies.delete(companyId)
        return company
      },
    },
  }
}

/**
 * `store` as a MongoDB store is while another instance deletes the company: its transactions find the company's own
 * document gone (the deletion's first, small transaction committed) and its rows still there (not swept yet).
 */
function sweptLater(store: Store, companyId: string): Store {
  return {
    ...store,
    transaction: (work, options) =>
      store.transaction(
        (tx) => work({ ...tx, companies: { ...tx.companies, get: async (id) => (id === companyId ? null : tx.companies.get(id)) } }),
        options,
      ),
  }
}

describe('admin writes that meet a deletion of their company', () => {
  const companyGone = { name: 'NotFoundError', resource: 'company' }

  it('answer 404 for an edit whose company is deleted while its rows are not yet swept, and change no row', async () => {
    const { store, dispose } = await openTestStore()
    try {
      const clock = new ManualClock()
      const id = (await loadFixture(store, clock, smallFixture('Doomed'))).company_id
      const planned = (await loadFixture(store, clock, plannedFixture('Planned', ['2026-01-15']))).company_id
      const [statement] = await store.statements.page(id, 'live', { limit: 1 })
      const [quota] = await store.quotas.list(id)
      const [value] = await store.quotaValues.page(id, quota.id, { limit: 1 })
      const [table] = await store.dataTables.list(id)
      const [line] = await store.commissionLines.page(id, table.id, { limit: 1 })
      const [structure] = await store.structures.list(id)
      const [plan] = await store.plans.list(planned)
      const [doomed, plannedDoomed] = [sweptLater(store, id), sweptLater(store, planned)]

      const edits = [
        () => reviseStatement(doomed, clock, id, statement.id, { payment: 1 }),
        () => reviseCommissionLine(doomed, clock, id, line.id, { commission: 1 }),
        () => reviseQuotaValue(doomed, clock, id, value.id, { value: 1 }),
        () => changeQuotaType(doomed, clock, id, quota.id, 'float'),
        () => reviseMetric(doomed, clock, id, 'attainment', { name: 'Renamed' }),
        () => reviseStructure(doomed, clock, id, structure.id, { name: 'Renamed' }),
        () => deletePlan(plannedDoomed, planned, plan.id),
      ]
      for (const edit of edits) await expect(edit()).rejects.toMatchObject(companyGone)
      expect(await store.statements.page(id, 'live', { limit: 1 })).toEqual([statement])
      expect(await store.commissionLines.page(id, table.id, { limit: 1 })).toEqual([line])
      expect(await store.quotaValues.page(id, quota.id, { limit: 1 })).toEqual([value])
      expect(await store.quotas.list(id)).toContainEqual(quota)
      expect((await store.metrics.list(id)).map((metric) => metric.name)).not.toContain('Renamed')
      expect(await store.structures.get(id, structure.id)).toEqual(structure)
      expect(await store.plans.list(planned)).toEqual([plan])
    } finally {
      await dispose()
    }
  })

  it('answer 404 and leave nothing behind: no key stored, no rates said to be, no plan refused for a table now gone', async () => {
    const { store, dispose } = await openTestStore()
    try {
      const clock = new ManualClock()
      const company = async () => (await loadFixture(store, clock, smallFixture('Doomed'))).company_id
      const doomed = await company()
      await expect(createCompanyKey(deletingOnceFound(store, doomed), clock, doomed)).rejects.toMatchObject(companyGone)
      expect(await store.apiKeys.list(doomed)).toEqual([])

      const rated = await company()
      await expect(setExchangeRates(deletingOnceFound(store, rated), clock, rated, { USD: 0.9 })).rejects.toMatchObject(companyGone)

      const planned = (await loadFixture(store, clock, plannedFixture('Planned', ['2026-01-15']))).company_id
      const plan: FixturePlan = { ...plannedFixture('Planned', []).plans![0], name: 'Late plan' }
      await expect(savePlan(deletingOnceFound(store, planned), clock, planned, plan)).rejects.toMatchObject(companyGone)
      expect(await store.plans.list(planned)).toEqual([])
    } finally {
      await dispose()
    }
  })
})

describe('a company deletion in flight when the instance stops', () => {
  it('is answered 503 once the stop begins, its sweep ended, rather than holding the stop until the sweep is over', async () => {
    const { store, dispose } = await openTestStore()
    const id = (await loadFixture(store, new ManualClock(), smallFixture('Stopping'))).company_id
    let sweepBegun!: () => void
    const sweeping = new Promise<void>((resolve) => (sweepBegun = resolve))
    // A large company's deletion: its sweep goes on until the signal it was given ends it, between two writes.
    const largeCompany: Store = {
      ...store,
      companies: {
        ...store.companies,
        async delete(companyId, options) {
          sweepBegun()
          await new Promise((resolve) => options?.signal?.addEventListener('abort', resolve))
          options?.signal?.throwIfAborted()
          return store.companies.delete(companyId, options)
        },
      },
    }
    const app = await buildApp({
      config: loadConfig({ DEMO: 'off', LOG_LEVEL: 'silent', ADMIN_TOKEN: TOKEN }),
      store: largeCompany,
      clock: new ManualClock(),
    })
    try {
      const url = await app.listen({ host: '127.0.0.1', port: 0 })
      const deletion = call(`${url}/admin/companies/${id}`, { method: 'DELETE', headers: admin })
      await sweeping
      const closed = app.close()
      const reply = await deletion
      expect(reply.status).toBe(503)
      expect(reply.body).toMatchObject({ type: 'ServiceUnavailableError', message: expect.stringContaining('send the deletion again') })
      expect(reply.headers['retry-after']).toBe('1')
      await closed
    } finally {
      await app.close()
      await dispose()
    }
  })
})
