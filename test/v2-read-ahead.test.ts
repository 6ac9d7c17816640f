import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { newId } from '../src/ids.ts'
import { VersionedAnswers } from '../src/reporting/versioned-answers.ts'
import { type KeptPages, type PageBytes, reportingPage } from '../src/v2/extraction.ts'
import { PageReadAhead, READ_AHEAD_PATIENCE_MS } from '../src/v2/read-ahead.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { startTestServer, type TestServer } from './helpers/server.ts'
import { V2_TEST_ENV, admin, idsByName, notFound, walk } from './v2-support.ts'

const version = (value: string | null) => async () => value

describe('PageReadAhead', () => {
  it('gives a page read ahead once, at the version it was read at', async () => {
    const pages = new PageReadAhead<string>()
    await pages.readAhead('a', version('v1'), async () => 'page a')
    expect(pages.size).toBe(1)
    expect(await pages.take('a', 'v1')).toBe('page a')
    expect(await pages.take('a', 'v1')).toBeNull()
  })

  it('gives nothing once the version moved, and drops the page', async () => {
    const pages = new PageReadAhead<string>()
    await pages.readAhead('a', version('v1'), async () => 'page a')
    expect(await pages.take('a', 'v2')).toBeNull()
    expect(pages.size).toBe(0)
  })

  it('reads nothing when the store has no version, or when told to keep none', async () => {
    let reads = 0
    const read = async () => `read ${++reads}`
    const unversioned = new PageReadAhead<string>()
    await unversioned.readAhead('a', version(null), read)
    const none = new PageReadAhead<string>(0)
    await none.readAhead('a', version('v1'), read)
    expect(reads).toBe(0)
    expect(await unversioned.take('a', null)).toBeNull()
    expect(await none.take('a', 'v1')).toBeNull()
  })

  it('gives null for a read that failed, so that the request reads the page itself', async () => {
    const pages = new PageReadAhead<string>()
    await pages.readAhead('a', version('v1'), async () => {
      throw new Error('disk gone')
    })
    expect(await pages.take('a', 'v1')).toBeNull()
  })

  it('reads nothing more once it holds its capacity, until a page is taken or the oldest has waited past its patience', async () => {
    let now = 0
    const pages = new PageReadAhead<string>(2, () => now)
    for (const key of ['a', 'b', 'c']) await pages.readAhead(key, version('v1'), async () => `page ${key}`)
    expect(pages.size).toBe(2)
    expect(await pages.take('c', 'v1')).toBeNull()
    expect(await pages.take('a', 'v1')).toBe('page a')
    await pages.readAhead('c', version('v1'), async () => 'page c')
    expect(await pages.take('c', 'v1')).toBe('page c')

    now = READ_AHEAD_PATIENCE_MS / 2
    await pages.readAhead('d', version('v1'), async () => 'page d')
    now = READ_AHEAD_PATIENCE_MS
    // Full (b, d): b, kept at 0, has waited its patience out and makes room; then d has not, and stays.
    await pages.readAhead('e', version('v1'), async () => 'page e')
    await pages.readAhead('f', version('v1'), async () => 'page f')
    expect(await pages.take('b', 'v1')).toBeNull()
    expect(await pages.take('f', 'v1')).toBeNull()
    expect(await pages.take('d', 'v1')).toBe('page d')
    expect(await pages.take('e', 'v1')).toBe('page e')
  })
})

describe('v2 statement and record pages read ahead over HTTP', () => {
  let server: TestServer
  let small: { companyId: string; apiKey: string }
  let other: { companyId: string; apiKey: string }
  let path: string
  let recordsPath: string
  let linesTableId: string

  beforeAll(async () => {
    server = await startTestServer(V2_TEST_ENV)
    small = await server.load(smallFixture())
    other = await server.load(smallFixture('Other'))
    const id = await idsByName(server, small.companyId)
    // Enough statements for several pages of 2.
    const [template] = await server.store.statements.page(small.companyId, 'live', { limit: 1 })
    await server.store.statements.insertMany(Array.from({ length: 6 }, (_, index) => ({ ...template, id: newId(), payment: 10 + index })))
    path = `/v2/reporting/${id('Statements')}/statements?limit=2`
    recordsPath = `/v2/reporting/${id('Deal commissions')}/records?limit=1`
    linesTableId = (await server.store.structures.list(small.companyId)).find(
      (structure) => structure.name === 'Deal commissions',
    )!.data_table_id!
    const [line] = await server.store.commissionLines.page(small.companyId, linesTableId, { limit: 1 })
    await server.store.commissionLines.insertMany(
      Array.from({ length: 3 }, (_, index) => ({ ...line, id: newId(), commission: 5 + index })),
    )
  })
  afterAll(() => server.close())

  const pagesReadAhead = async () => {
    const text = (await server.call('/metrics')).text
    return Number(/^commission_api_v2_pages_read_ahead_total (\d+)$/m.exec(text)?.[1])
  }

  it('answers every page after the first from its read-ahead, with what the store holds', async () => {
    const before = await pagesReadAhead()
    const { rows, metas } = await walk(server, small.apiKey, path)
    expect(metas.length).toBeGreaterThan(3)
    expect(await pagesReadAhead()).toBe(before + metas.length - 1)
    const stored = await server.store.statements.page(small.companyId, 'live', { limit: 100 })
    expect(rows.map((row) => [row['standard.id'], row['standard.total_commission'].value])).toEqual(
      stored.map((statement) => [statement.id, statement.payment]),
    )
  })

  it('answers record pages after the first from their read-ahead, with the lines the store holds', async () => {
    const before = await pagesReadAhead()
    const { rows, metas } = await walk(server, small.apiKey, recordsPath)
    expect(metas.length).toBeGreaterThan(2)
    expect(await pagesReadAhead()).toBe(before + metas.length - 1)
    const stored = await server.store.commissionLines.page(small.companyId, linesTableId, { limit: 100 })
    expect(rows.map((row) => row['standard.id'])).toEqual(stored.map((line) => line.id))
  })

  it('does not answer a page read before an edit: the edit shows on the next page', async () => {
    const before = await pagesReadAhead()
    const second = (await server.store.statements.page(small.companyId, 'live', { limit: 4 }))[2]
    const { rows } = await walk(server, small.apiKey, path, async (page) => {
      if (page !== 0) return
      const edit = await server.call(`/admin/companies/${small.companyId}/statements/${second.id}`, {
        method: 'PATCH',
        headers: admin,
        body: { payment: 777 },
      })
      expect(edit.status).toBe(200)
    })
    expect(rows.find((row) => row['standard.id'] === second.id)['standard.total_commission'].value).toBe(777)
    // The second page was read again; the later ones were read ahead after the edit.
    const pages = Math.ceil(rows.length / 2)
    expect(await pagesReadAhead()).toBe(before + pages - 2)
  })

  it('answers a next_url asked for with another Host with that host in its own next_url', async () => {
    const first = await server.call(path, { key: small.apiKey })
    const next = new URL(first.body.meta.next_url)
    const second = await server.call(next.pathname + next.search, { key: small.apiKey, headers: { host: 'sync.example:8080' } })
    expect(second.status).toBe(200)
    expect(second.body.meta.next_url).toMatch(/^http:\/\/sync\.example:8080\/v2\/reporting\//)
  })

  it('reads nothing ahead after a page larger than its bound: a walk of large pages reads each when asked', async () => {
    const statements = (await server.store.structures.list(small.companyId)).find((structure) => structure.name === 'Statements')!
    const answerWith = async (kept: KeptPages) => {
      const page = await reportingPage('statements', server.store, small.companyId, statements.id, { limit: 2 }, 'http://x', kept)
      page.readNext()
      // Let the read ahead, if any, be kept.
      await new Promise((resolve) => setImmediate(resolve))
      return page
    }
    const roomy = { readAhead: new PageReadAhead<PageBytes>(), answered: new VersionedAnswers<PageBytes>(0) }
    const first = await answerWith(roomy)
    expect(roomy.readAhead.size).toBe(1)
    const tight = {
      readAhead: new PageReadAhead<PageBytes>(16, undefined, first.bytes.length - 1),
      answered: new VersionedAnswers<PageBytes>(0),
    }
    await answerWith(tight)
    expect(tight.readAhead.size).toBe(0)
  })

  it('never answers another company with a page read ahead for the first', async () => {
    const first = await server.call(path, { key: small.apiKey })
    const next = new URL(first.body.meta.next_url)
    const reply = await server.call(next.pathname + next.search, { key: other.apiKey })
    expect(reply.status).toBe(404)
    expect(reply.body).toEqual(notFound('table'))
  })
})
