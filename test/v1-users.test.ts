import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { smallFixture } from './helpers/fixtures.ts'
import { type TestServer, startTestServer } from './helpers/server.ts'
import { ValidationError } from '../src/errors.ts'

describe('GET /v1/users', () => {
  let server: TestServer
  let acme: { companyId: string; apiKey: string }
  let globex: { companyId: string; apiKey: string }

  beforeAll(async () => {
    server = await startTestServer({}, {}, { transport: 'inject' })
    acme = await server.load(smallFixture('Acme'))
    globex = await server.load(smallFixture('Globex'))
  })
  afterAll(() => server.close())

  it('lists every user, archived ones included, with the standard fields and every custom attribute', async () => {
    const reply = await server.call('/v1/users', { key: acme.apiKey })
    expect(reply.status).toBe(200)
    const stored = await server.store.users.list(acme.companyId, { offset: 0, limit: 100 })
    const id = (email: string) => stored.find((user) => user.email === email)!.id
    expect(reply.body).toEqual({
      count: 3,
      next: null,
      data: [
        {
          id: id('owner@acme.example'),
          email: 'owner@acme.example',
          name: 'Olive Owner',
          status: 'active',
          role: 'admin',
          currency: 'EUR',
          calculation_currency: 'EUR',
          region: 'EMEA',
          base_salary: 50000,
          base_salary_currency: 'EUR',
        },
        {
          id: id('rep@acme.example'),
          email: 'rep@acme.example',
          name: 'Rita Rep',
          status: 'active',
          role: 'sales',
          currency: 'USD',
          calculation_currency: 'USD',
          region: null,
          base_salary: null,
          base_salary_currency: null,
        },
        {
          id: id('gone@acme.example'),
          email: 'gone@acme.example',
          name: 'Gary Gone',
          status: 'archived',
          role: null,
          currency: 'EUR',
          calculation_currency: 'EUR',
          region: null,
          base_salary: null,
          base_salary_currency: null,
        },
      ],
    })
    // Standard fields first, then the attributes in definition order: a column-mapping client can rely on it.
    expect(Object.keys(reply.body.data[0])).toEqual([
      'id',
      'email',
      'name',
      'status',
      'role',
      'currency',
      'calculation_currency',
      'region',
      'base_salary',
      'base_salary_currency',
    ])
  })

  it('serves a user changed in the store as it now is, and no attribute the company does not define', async () => {
    const user = (await server.store.users.findByEmails(acme.companyId, ['rep@acme.example'])).get('rep@acme.example')!
    const changed = {
      ...user,
      status: 'inactive' as const,
      attributes: { region: 'APAC', base_salary: 10, base_salary_currency: 'USD', stray: 1 },
    }
    await server.store.users.save(acme.companyId, [changed])
    const reply = await server.call('/v1/users', { key: acme.apiKey })
    const rep = reply.body.data.find((row: { id: string }) => row.id === user.id)
    expect(rep).toMatchObject({ status: 'inactive', region: 'APAC', base_salary: 10, base_salary_currency: 'USD' })
    expect(rep).not.toHaveProperty('stray')
  })

  it("refuses a custom attribute under one of a user's own fields, which one read would show and another hide", async () => {
    const fixture = smallFixture('Clash')
    fixture.user_attributes!.push(
      { api_key: 'email', name: 'E-mail (custom)', type: 'string' },
      { api_key: 'country', name: 'Country (custom)', type: 'string' },
      { api_key: 'status', name: 'Status (custom)', type: 'string' },
      { api_key: 'calculation', name: 'Calculation', type: 'amount' },
      { api_key: 'region_code', name: 'Region code', type: 'string' },
    )
    const refused: unknown = await server.load(fixture).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(ValidationError)
    const { issues } = refused as ValidationError
    const first = fixture.user_attributes!.length - 5
    expect(issues.map((issue) => issue.resource)).toEqual([0, 1, 2, 3].map((index) => `/user_attributes/${first + index}/api_key`))
    expect(issues[3].description).toMatch(/^calculation_currency is a user's own field/)
  })

  it("refuses a custom attribute under an amount attribute's <key>_currency, which an upsert would write unchecked as that currency", async () => {
    const fixture = smallFixture('Sibling')
    fixture.user_attributes!.push({ api_key: 'base_salary_currency', name: 'Salary currency (custom)', type: 'string' })
    const refused: unknown = await server.load(fixture).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(ValidationError)
    expect((refused as ValidationError).issues).toMatchObject([
      {
        resource: '/user_attributes/2/api_key',
        description: expect.stringMatching(/^base_salary_currency is the currency of amount base_salary/),
      },
    ])
  })

  it("never lists another company's users", async () => {
    const reply = await server.call('/v1/users', { key: globex.apiKey })
    expect(reply.body.count).toBe(3)
    for (const user of reply.body.data) expect(user.email).toMatch(/@globex\.example$/)
    const globexIds = (await server.store.users.list(globex.companyId, { offset: 0, limit: 100 })).map((user) => user.id)
    expect(reply.body.data.map((user: { id: string }) => user.id)).toEqual(globexIds)
  })

  it('answers 401 without a key', async () => {
    const reply = await server.call('/v1/users')
    expect(reply.status).toBe(401)
    expect(reply.body).toEqual({ message: expect.any(String), type: 'UnauthorizedError' })
  })
})
