import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import * as fc from 'fast-check'
import { Compile } from 'typebox/compile'
import { Value } from 'typebox/value'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../src/clock.ts'
import { ValidationError } from '../src/errors.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import { FixtureSchema } from '../src/fixtures/schema.ts'
import type { Store } from '../src/store/port.ts'
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { runCli, tempDataDir } from './helpers/process.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'
import { openTestStore } from './helpers/test-store.ts'

/** The refusal a fixture gets from a fresh store: the thrown error, which must be a ValidationError. */
async function refusalOf(fixture: unknown): Promise<ValidationError> {
  const store = openSqliteStore(':memory:')
  try {
    const error: unknown = await loadFixture(store, new ManualClock(), fixture).then(
      () => null,
      (thrown: unknown) => thrown,
    )
    expect(error).toBeInstanceOf(ValidationError)
    expect(await store.companies.list()).toEqual([])
    return error as ValidationError
  } finally {
    await store.close()
  }
}

const resources = (error: ValidationError) => error.issues.map((issue) => issue.resource)

/** A plan on the small fixture's deals, but for its name. */
const PLAN_ON_DEALS = {
  data_table: 'deals',
  user_field: 'deal_id',
  date_field: 'deal_id',
  amount_field: 'amount',
  frequency: 'monthly',
  rate: 0.1,
}

describe('bad fixtures are refused cleanly', () => {
  it('reports schema problems and cross-reference problems in one pass', async () => {
    const fixture = smallFixture() as any
    fixture.users[1].currency = 'dollars' // a schema problem
    fixture.statements[0].user = 'nobody@acme.example' // a reference that does not resolve
    fixture.quotas[0].values[0].period = '2026-Q1' // a monthly quota: a value check of the planner
    fixture.custom_metrics.push({ api_key: 'tier', name: 'Again', kind: 'float' }) // a duplicated key
    expect(resources(await refusalOf(fixture))).toEqual(
      expect.arrayContaining(['/users/1/currency', '/statements/0/user', '/quotas/0/values/0/period', '/custom_metrics/3/api_key']),
    )
  })

  it('checks every value of a map whatever its key, a line break in it too, and refuses an exchange rate not keyed by a currency', async () => {
    const fixture = smallFixture() as any
    fixture.statements[0].dimensions = { 'line\nbreak': 5, plain: ['kept'] }
    fixture.company.exchange_rates = { usd: 'x', USD: 0.9 }
    const issues = (await refusalOf(fixture)).issues
    expect(issues).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ resource: '/statements/0/dimensions/line\nbreak' }),
        expect.objectContaining({ resource: '/company/exchange_rates', description: 'unknown properties: usd' }),
      ]),
    )
  })

  it('refuses a record marked deleted, an arrival date not in the calendar, and two quotas of one name in an environment', async () => {
    const fixture = smallFixture() as any
    fixture.data_tables[0].records[1].deleted = true
    fixture.users[1].arrival_date = '2026-02-30'
    fixture.quotas.push({ name: 'Monthly bookings', type: 'amount', frequency: 'monthly', values: [] })
    fixture.quotas.push({ name: 'Monthly bookings', type: 'amount', frequency: 'monthly', environment: 'sandbox', values: [] })
    const issues = (await refusalOf(fixture)).issues
    expect(issues.map((issue) => issue.resource)).toEqual(
      expect.arrayContaining(['/data_tables/0/records/1/deleted', '/users/1/arrival_date', `/quotas/${fixture.quotas.length - 2}/name`]),
    )
    // The same name in the other environment is another quota.
    expect(issues.map((issue) => issue.resource)).not.toContain(`/quotas/${fixture.quotas.length - 1}/name`)
  })

  it('lists those problems in the same pass as a schema problem elsewhere', async () => {
    const fixture = smallFixture() as any
    fixture.users[1].currency = 'dollars'
    fixture.users[0].arrival_date = '2026-02-30'
    fixture.data_tables[0].records[1].deleted = 'true'
    expect(resources(await refusalOf(fixture))).toEqual(
      expect.arrayContaining(['/users/1/currency', '/users/0/arrival_date', '/data_tables/0/records/1/deleted']),
    )
  })

  it('reports a record without an id once, at its id field, however many there are and whatever overrides it has', async () => {
    const fixture = smallFixture() as any
    fixture.data_tables[0].records.push({ deal_name: 'No id', overrides: { deal_name: 'Renamed' } }, { deal_name: 'No id either' })
    const issues = (await refusalOf(fixture)).issues
    expect(issues).toEqual([
      expect.objectContaining({ resource: '/data_tables/0/records/2/deal_id', description: 'deal_id: the id field is required' }),
      expect.objectContaining({ resource: '/data_tables/0/records/3/deal_id', description: 'deal_id: the id field is required' }),
    ])
  })

  it('points at the currency beside an amount when that is wrong, and escapes a key in a path as JSON pointers do', async () => {
    const fixture = smallFixture() as any
    fixture.data_tables[0].records.push(
      { deal_id: 'D-3', amount: 5, amount_currency: 'eur' },
      { deal_id: 'D-4', 'a/b': 1, 'x~y': 2 },
      // A record whose id is the text "null" is no duplicate of one without an id.
      { deal_name: 'No id' },
      { deal_id: 'null' },
    )
    fixture.users[0].attributes = { 'odd/key': 1 }
    fixture.data_tables[0].records[0].overrides = { 'o/p': 1, amount: 3, amount_currency: 'usd' }
    fixture.statements[0].metrics = { 'm/~x': 1 }
    fixture.statements[1].dimensions = { 'a/\u0000~': ['x'] }
    const issues = (await refusalOf(fixture)).issues.map((issue) => issue.resource)
    expect(issues).toEqual(
      expect.arrayContaining([
        '/data_tables/0/records/2/amount_currency',
        '/data_tables/0/records/3/a~1b',
        '/data_tables/0/records/3/x~0y',
        '/data_tables/0/records/4/deal_id',
        '/users/0/attributes/odd~1key',
        '/data_tables/0/records/0/overrides/o~1p',
        '/data_tables/0/records/0/overrides/amount_currency',
        '/statements/0/metrics/m~1~0x',
        '/statements/1/dimensions/a~1\u0000~0',
      ]),
    )
    expect(issues).not.toContain('/data_tables/0/records/5/deal_id')
  })

  it('refuses a blank or overlong plan name, which every statement and line of the plan repeats', async () => {
    const fixture = smallFixture() as any
    fixture.plans = [
      { ...PLAN_ON_DEALS, name: '   ' },
      { ...PLAN_ON_DEALS, name: 'x'.repeat(201) },
    ]
    expect(resources(await refusalOf(fixture))).toEqual(expect.arrayContaining(['/plans/0/name', '/plans/1/name']))
  })

  it('refuses a statement or line loaded under the name of a plan of the fixture, in its environment: the plan states its periods itself', async () => {
    const fixture = smallFixture() as any
    fixture.plans = [{ ...PLAN_ON_DEALS, name: 'Sales 2026' }]
    const refused = resources(await refusalOf(fixture))
    expect(refused).toEqual(expect.arrayContaining(['/statements/0/plan', '/commission_lines/0/plan']))
    // A plan of that name in the other environment states other cells.
    fixture.plans = [{ ...PLAN_ON_DEALS, name: 'Sales 2026', environment: 'sandbox' }]
    const store = openSqliteStore(':memory:')
    try {
      const elsewhere = await loadFixture(store, new ManualClock(), fixture).then(
        () => [],
        (error: ValidationError) => resources(error),
      )
      expect(elsewhere.filter((resource) => resource.endsWith('/plan'))).toEqual([])
    } finally {
      await store.close()
    }
  })

  it('finds the record a commission line names as its id field is read, without the spaces around it', async () => {
    const fixture = smallFixture() as any
    fixture.commission_lines[0].record = ' D-1 '
    const store = openSqliteStore(':memory:')
    try {
      const loaded = await loadFixture(store, new ManualClock(), fixture)
      expect(loaded.company_id).toMatch(/^[0-9a-f]{24}$/)
    } finally {
      await store.close()
    }
  })

  it("refuses a user's amount attribute without its currency beside it, and one of the wrong type", async () => {
    const fixture = smallFixture() as any
    fixture.users[0].attributes = { region: 'EMEA', base_salary: 50000 }
    fixture.users[1].attributes = { region: 7 }
    const issues = (await refusalOf(fixture)).issues
    expect(issues).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          resource: '/users/0/attributes/base_salary',
          description: expect.stringContaining('base_salary_currency beside it'),
        }),
        expect.objectContaining({ resource: '/users/1/attributes/region', description: expect.stringContaining('expected a string') }),
      ]),
    )
  })

  it('a user left out for a schema problem does not hide the problems of the items that name it', async () => {
    const fixture = smallFixture() as any
    fixture.users[1].junior = 'yes'
    fixture.managers = [{ user: 'rep@acme.example', manager: 'owner@acme.example', start_date: '2026-01', end_date: '2025-01' }]
    expect(resources(await refusalOf(fixture))).toEqual(['/users/1/junior', '/managers/0/end_date'])
  })

  it('a plan left out for a schema problem does not hide the problems of the other plans and parts', async () => {
    const fixture = smallFixture() as any
    const plan = {
      data_table: 'nowhere',
      user_field: 'owner',
      date_field: 'closed',
      amount_field: 'amount',
      frequency: 'monthly',
      rate: 0.1,
    }
    fixture.plans = [{ name: 'Unfinished' }, { name: 'Sales', ...plan }]
    fixture.api_keys = [{ user: 'nobody@acme.example' }]
    expect(resources(await refusalOf(fixture))).toEqual(expect.arrayContaining(['/plans/0', '/plans/1/data_table', '/api_keys/0/user']))
  })

  it("refuses a table field named like an amount field's <key>_currency, which a record's amount would be read with", async () => {
    const fixture = smallFixture()
    fixture.data_tables![0].fields.push({ api_key: 'amount_currency', name: 'Amount currency', type: 'string' })
    expect((await refusalOf(fixture)).issues).toMatchObject([
      {
        resource: '/data_tables/0/fields/4/api_key',
        description: expect.stringMatching(/^amount_currency is the currency of amount amount/),
      },
    ])
  })

  it('refuses what the loader cannot read as a time or a month, rates the admin route refuses, a field named deleted', async () => {
    const fixture = smallFixture() as any
    fixture.users[0].modified_at = '2026-12-31T23:59:60Z' // a leap second: no instant holds it
    fixture.users[1].modified_at = '2026-01-01T00:00:00Z[Europe/Paris]'
    fixture.custom_metrics[0].created_at = '2026-01-01 10:00:00Z'
    fixture.closed_periods = [{ through: '2026-13', status: 'paid' }]
    fixture.company.exchange_rates = { EUR: 2, USD: 1.1 }
    fixture.data_tables[0].fields.push({ api_key: 'deleted', name: 'Deleted', type: 'boolean' })
    // Times whose offset carries them out of the years 0000 to 9999.
    fixture.statements[0].modified_at = '9999-12-31T23:59:59-23:59'
    fixture.quotas[0].values[0].modified_at = '0000-01-01T00:00:00+01:00'
    fixture.data_tables[0].records[0].modified_at = '9999-12-31T23:59:59-23:59'
    fixture.data_tables[0].records[1].modified_at = 'March 1, 2026 10:00'
    // Rows are stamped to the millisecond: a digit past it would be dropped, and the row stamped before its time.
    fixture.custom_metrics[1].created_at = '2026-01-01T10:00:00.0001Z'
    fixture.quotas[1].values[0].modified_at = '2026-01-05T00:00:00.1234567+01:00'
    expect(resources(await refusalOf(fixture))).toEqual(
      expect.arrayContaining([
        '/users/0/modified_at',
        '/users/1/modified_at',
        '/custom_metrics/0/created_at',
        '/closed_periods/0/through',
        '/company/exchange_rates/EUR',
        '/data_tables/0/fields/4/api_key',
        '/statements/0/modified_at',
        '/quotas/0/values/0/modified_at',
        '/data_tables/0/records/0/modified_at',
        '/data_tables/0/records/1/modified_at',
        '/custom_metrics/1/created_at',
        '/quotas/1/values/0/modified_at',
      ]),
    )
    expect(resources(await refusalOf(fixture))).not.toContain('/company/exchange_rates/USD')
  })

  it.each(['__proto__', 'constructor', 'prototype', '_bsontype'])(
    'refuses %s as a field, attribute, metric or dimension key',
    async (name) => {
      const fixture = JSON.parse(JSON.stringify(smallFixture()).replace('"region"', JSON.stringify(name))) as any
      fixture.data_tables[0].fields.push({ api_key: name, name: 'Reserved', type: 'string' })
      fixture.custom_metrics.push({ api_key: name, name: 'Reserved', kind: 'float' })
      fixture.statements[0].dimensions = JSON.parse(`{${JSON.stringify(name)}: ["x"]}`)
      const found = resources(await refusalOf(fixture))
      expect(found).toEqual(
        expect.arrayContaining([
          '/user_attributes/0/api_key',
          '/data_tables/0/fields/4/api_key',
          '/custom_metrics/3/api_key',
          `/statements/0/dimensions/${name}`,
        ]),
      )
    },
  )

  it('refuses a secret given twice in one fixture', async () => {
    const fixture = smallFixture()
    fixture.api_keys = [
      { user: 'owner@acme.example', secret: 'cak_the-same-secret-twice' },
      { user: 'rep@acme.example', secret: 'cak_the-same-secret-twice' },
    ]
    const error = await refusalOf(fixture)
    expect(error.issues).toEqual([{ resource: '/api_keys/1/secret', description: expect.stringContaining('/api_keys/0/secret') }])
  })

  it("refuses a secret not of the service's form, which a log would not know for a key", async () => {
    for (const secret of ['a-secret-without-the-prefix', 'cak_a-secret-with-an-é-in-it', 'cak_a-secret-ending-in-a-space ', 'cak_short']) {
      const fixture = smallFixture()
      fixture.api_keys = [{ user: 'owner@acme.example', secret }]
      const error = await refusalOf(fixture)
      expect(error.issues).toEqual([{ resource: '/api_keys/0/secret', description: expect.stringContaining('an API key: cak_ then') }])
    }
  })

  it('never throws anything but a refusal, whatever a fixture holds', async () => {
    const store = openSqliteStore(':memory:')
    try {
      await fc.assert(
        fc.asyncProperty(alteredFixtures(), async (fixture) => {
          const outcome = await loadFixture(store, new ManualClock(), fixture).then(
            () => 'loaded',
            (error: unknown) => error,
          )
          return outcome === 'loaded' || outcome instanceof ValidationError
        }),
        { numRuns: 150 },
      )
      await expect(store.companies.list()).resolves.toBeDefined()
    } finally {
      await store.close()
    }
  })

  it("are told apart by the compiled schema exactly as by the schema's listed errors", () => {
    // The load asks the compiled schema first and lists errors only when it says no: both must agree.
    const compiled = Compile(FixtureSchema)
    fc.assert(
      fc.property(alteredFixtures(), (fixture) => compiled.Check(fixture) === (Value.Errors(FixtureSchema, fixture).length === 0)),
      { numRuns: 400 },
    )
    expect(compiled.Check(smallFixture())).toBe(true)
  })
})

/** The small fixture with a whole section, or one item (or one field of one item) of it, replaced with arbitrary JSON. */
function alteredFixtures(): fc.Arbitrary<unknown> {
  const base = smallFixture() as any
  return fc
    .tuple(fc.constantFrom(...Object.keys(base)), fc.nat(), fc.jsonValue({ maxDepth: 3 }), fc.boolean())
    .map(([section, at, value, whole]) => {
      const fixture = structuredClone(base)
      const items = fixture[section]
      if (whole || !Array.isArray(items)) fixture[section] = value
      else {
        const item = items[at % items.length]
        const fields = Object.keys(item)
        if (at % 2 === 0) items[at % items.length] = value
        else item[fields[at % fields.length]] = value
      }
      return fixture
    })
}

function fixtureWithSecret(name: string) {
  const fixture = smallFixture(name)
  fixture.api_keys = [{ user: `owner@${name.toLowerCase()}.example`, secret: 'cak_a-secret-two-companies-want' }]
  return fixture
}

describe('an API-key secret another company uses', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer({ ADMIN_TOKEN: 'fixture-refusals-admin-token' }, {}, { transport: 'inject' })
  })
  afterAll(() => server.close())

  it('is a 400 from POST /admin/companies naming /api_keys/N/secret as a ConflictError, and the first company keeps its key', async () => {
    const admin = { authorization: 'Bearer fixture-refusals-admin-token' }
    expect((await server.call('/admin/companies', { method: 'POST', headers: admin, body: fixtureWithSecret('First') })).status).toBe(201)
    const second = await server.call('/admin/companies', { method: 'POST', headers: admin, body: fixtureWithSecret('Second') })
    expect(second.status).toBe(400)
    expect(second.body).toEqual({
      count: 1,
      errors: [{ error: 'ConflictError', resource: '/api_keys/0/secret', description: expect.any(String) }],
    })
    expect((await server.call('/v2/data-structures', { key: 'cak_a-secret-two-companies-want' })).status).toBe(200)
  })

  it('is the same refusal for a load whose secret another load took while it was checked (a retry of one still running), not a conflict of the store', async () => {
    const { store, dispose } = await openTestStore()
    try {
      const clock = new ManualClock()
      let first: Promise<unknown> | null = null
      // Another request's load of the same secret commits once this one has found the secret free, before it writes.
      const racing: Store = {
        ...store,
        apiKeys: {
          ...store.apiKeys,
          async findByHash(hash) {
            const found = await store.apiKeys.findByHash(hash)
            first ??= loadFixture(store, clock, fixtureWithSecret('First'))
            await first
            return found
          },
        },
      }
      const error = await loadFixture(racing, clock, fixtureWithSecret('Second')).catch((thrown: unknown) => thrown)
      expect(error).toBeInstanceOf(ValidationError)
      expect((error as ValidationError).issues).toEqual([
        { error: 'ConflictError', resource: '/api_keys/0/secret', description: expect.any(String) },
      ])
      expect((await store.companies.list()).map((company) => company.name)).toEqual(['First'])
    } finally {
      await dispose()
    }
  })

  it('is a clean refusal from the CLI, with every problem listed and no stack', () => {
    const dataDir = tempDataDir()
    const file = resolve(dataDir, 'fixture.json')
    const env = { DATA_DIR: dataDir }
    const write = (fixture: unknown) => writeFileSync(file, JSON.stringify(fixture))
    write(fixtureWithSecret('First'))
    expect(runCli(['load', file], env).code).toBe(0)
    const broken = fixtureWithSecret('Second') as any
    broken.users[0].currency = 'euros'
    write(broken)
    const refused = runCli(['load', file], env)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('/api_keys/0/secret: this secret is already an API key')
    expect(refused.stderr).toContain('/users/0/currency')
    expect(refused.stderr).not.toMatch(/\n\s+at /)
  })
})

describe('the fixtures the documentation shows', () => {
  const root = resolve(import.meta.dirname, '..')
  const pages = [
    'README.md',
    ...readdirSync(resolve(root, 'docs'))
      .filter((name) => name.endsWith('.md'))
      .map((name) => `docs/${name}`),
  ]
  const documentation = pages.map((page) => readFileSync(resolve(root, page), 'utf8')).join('\n')
  const fixtures = [...documentation.matchAll(/```json\n([\s\S]*?)```/g)]
    .map((match) => match[1])
    .filter((block) => /^\s*\{\s*"company"/.test(block))

  it('there is at least one', () => {
    expect(fixtures.length).toBeGreaterThan(0)
  })

  it.each(fixtures.map((text, index) => [index, text]))('fixture %i loads', async (_index, text) => {
    const store = openSqliteStore(':memory:')
    try {
      const loaded = await loadFixture(store, new ManualClock(), JSON.parse(text as string))
      expect(loaded.api_keys).toHaveLength(1)
    } finally {
      await store.close()
    }
  })
})
