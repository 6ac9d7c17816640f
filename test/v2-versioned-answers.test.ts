import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { newId } from '../src/ids.ts'
import { VersionedAnswers } from '../src/reporting/versioned-answers.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'
import { V2_TEST_ENV, admin, idsByName } from './v2-support.ts'

/** A store whose data version is whatever the test sets. */
function versionedStore(initial: string | null) {
  const store = { version: initial, dataVersion: async () => store.version }
  return store
}

describe('VersionedAnswers', () => {
  it('keeps an answer while the store stays at its version, and computes it again once the version moves', async () => {
    const store = versionedStore('v1')
    const answers = new VersionedAnswers<string>()
    let computed = 0
    const compute = async () => `answer ${++computed}`
    expect(await answers.answer(store, 'a', compute)).toBe('answer 1')
    expect(await answers.answer(store, 'a', compute)).toBe('answer 1')
    expect(await answers.answer(store, 'b', compute)).toBe('answer 2')
    store.version = 'v2'
    expect(await answers.answer(store, 'a', compute)).toBe('answer 3')
    expect(await answers.answer(store, 'a', compute)).toBe('answer 3')
  })

  it('keeps nothing when the store has no version', async () => {
    const answers = new VersionedAnswers<string>()
    let computed = 0
    const compute = async () => `answer ${++computed}`
    await answers.answer(versionedStore(null), 'a', compute)
    expect(await answers.answer(versionedStore(null), 'a', compute)).toBe('answer 2')
    expect(answers.size).toBe(0)
  })

  it('shares one computation between concurrent requests, and keeps none that failed', async () => {
    const store = versionedStore('v1')
    const answers = new VersionedAnswers<string>()
    let computed = 0
    const failing = async () => {
      computed++
      throw new Error('no such structure')
    }
    const both = await Promise.allSettled([answers.answer(store, 'a', failing), answers.answer(store, 'a', failing)])
    expect(both.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected'])
    expect(computed).toBe(1)
    expect(answers.size).toBe(0)
    expect(await answers.answer(store, 'a', async () => 'found')).toBe('found')
  })

  it('drops every stale answer as soon as the version moves, and keeps no answer too large to keep', async () => {
    const store = versionedStore('v1')
    const answers = new VersionedAnswers<string>(10, (answer) => answer.length <= 8)
    let computed = 0
    const compute = async () => `answer ${++computed}`
    for (const key of ['a', 'b', 'c']) await answers.answer(store, key, compute)
    expect(answers.size).toBe(3)
    store.version = 'v2'
    await answers.answer(store, 'd', compute)
    expect(answers.size).toBe(1)
    // Too large: given, then forgotten.
    expect(await answers.answer(store, 'big', async () => 'a long answer')).toBe('a long answer')
    expect(answers.size).toBe(1)
    expect(await answers.answer(store, 'big', async () => 'computed again')).toBe('computed again')
  })

  it('keeps at most its capacity, the oldest going first', async () => {
    const store = versionedStore('v1')
    const answers = new VersionedAnswers<string>(2)
    let computed = 0
    const compute = async () => `answer ${++computed}`
    for (const key of ['a', 'b', 'c']) await answers.answer(store, key, compute)
    expect(answers.size).toBe(2)
    expect(await answers.answer(store, 'c', compute)).toBe('answer 3')
    expect(await answers.answer(store, 'a', compute)).toBe('answer 4')
  })
})

const totalOf = (reply: { body: { data: Array<{ name: string; total_records: number }> } }, name: string) =>
  reply.body.data.find((entry) => entry.name === name)?.total_records

describe('discovery, field schemas and small pages answered again until the data changes', () => {
  let server: TestServer
  let small: { companyId: string; apiKey: string }
  let other: { companyId: string; apiKey: string }

  beforeAll(async () => {
    server = await startTestServer(V2_TEST_ENV)
    small = await server.load(smallFixture())
    other = await server.load(smallFixture('Other'))
  })
  afterAll(() => server.close())

  it('counts a statement written after the list was answered, and lists each company its own structures', async () => {
    const first = await server.call('/v2/data-structures', { key: small.apiKey })
    expect(await server.call('/v2/data-structures', { key: small.apiKey })).toMatchObject({ status: 200, body: first.body })
    const [template] = await server.store.statements.page(small.companyId, 'live', { limit: 1 })
    await server.store.statements.insertMany([{ ...template, id: newId() }])
    const after = await server.call('/v2/data-structures', { key: small.apiKey })
    expect(totalOf(after, 'Statements')).toBe(Number(totalOf(first, 'Statements')) + 1)

    const others = await server.call('/v2/data-structures', { key: other.apiKey })
    const ownIds = new Set((await server.store.structures.list(other.companyId)).map((structure) => structure.id))
    expect(
      others.body.data.filter((entry: { type: string }) => entry.type !== 'quota').every((entry: { id: string }) => ownIds.has(entry.id)),
    ).toBe(true)
  })

  it('gives each Host its own links', async () => {
    const reply = await server.call('/v2/data-structures', { key: small.apiKey, headers: { host: 'sync.example:8080' } })
    expect(reply.body.data[0].links.fields).toMatch(/^http:\/\/sync\.example:8080\/v2\/data-structures\//)
  })

  it('answers a small statements page again, and shows a statement edited after it was answered', async () => {
    const id = await idsByName(server, small.companyId)
    const path = `/v2/reporting/${id('Statements')}/statements?limit=5`
    const first = await server.call(path, { key: small.apiKey })
    expect((await server.call(path, { key: small.apiKey })).body).toStrictEqual(first.body)
    const edited = first.body.data[0]['standard.id']
    const edit = await server.call(`/admin/companies/${small.companyId}/statements/${edited}`, {
      method: 'PATCH',
      headers: admin,
      body: { payment: 4321 },
    })
    expect(edit.status).toBe(200)
    const after = await server.call(path, { key: small.apiKey })
    expect(after.body.data[0]).toMatchObject({ 'standard.id': edited, 'standard.total_commission': { value: 4321 } })
  })

  it('answers a small page of users again, and counts a user created after it was answered', async () => {
    const first = await server.call('/v1/users?limit=10', { key: small.apiKey })
    expect((await server.call('/v1/users?limit=10', { key: small.apiKey })).body).toStrictEqual(first.body)
    const [template] = await server.store.users.list(small.companyId, { offset: 0, limit: 1 })
    await server.store.users.save(small.companyId, [{ ...template, id: newId(), email: 'later@versioned.example' }])
    const after = await server.call('/v1/users?limit=10', { key: small.apiKey })
    expect(after.body.count).toBe(first.body.count + 1)
  })

  it('shows a metric renamed after the schema was answered, with a new schema_hash', async () => {
    const id = await idsByName(server, small.companyId)
    const path = `/v2/data-structures/${id('Statements')}/fields`
    const before = await server.call(path, { key: small.apiKey })
    const metric = before.body.fields.find((field: { origin: string }) => field.origin === 'custom')
    const apiKey = metric.api_key.replace(/^custom\./, '')
    const renamed = await server.call(`/admin/companies/${small.companyId}/custom-metrics/${apiKey}`, {
      method: 'PATCH',
      headers: admin,
      body: { name: 'Renamed metric' },
    })
    expect(renamed.status).toBe(200)
    const after = await server.call(path, { key: small.apiKey })
    expect(after.body.fields.find((field: { api_key: string }) => field.api_key === metric.api_key).name).toBe('Renamed metric')
    expect(after.body.schema_hash).not.toBe(before.body.schema_hash)
  })
})
