import { type DataStructure, type FieldSchema, followedNextUrl, rowsPathOf } from '../client/index.ts'
import { answered, type CheckContext, unknownId } from './context.ts'
import {
  expectThat,
  fieldProblems,
  isDate,
  isObject,
  isObjectId,
  isUserReference,
  LISTED_FORMATS,
  notFoundBodyProblems,
  pageMetaProblems,
  periodMatches,
  type Problems,
  unauthorizedBodyProblems,
  validationBodyProblems,
  valueMatchesField,
} from './shapes.ts'

/**
 * The read-only checks: authentication, discovery, field schemas, rows, pagination, filters, bounds and error
 * bodies, each against the specification's text. Every request is a read.
 */

type Row = Record<string, unknown>
const PAGE_WALK_LIMIT = 8
const FAR_PAST = '1971-01-01T00:00:00Z'
const FAR_FUTURE = '2999-01-01T00:00:00Z'

export async function authenticationChecks(ctx: CheckContext): Promise<void> {
  const missing = await ctx.get('/v2/data-structures', {}, null)
  ctx.verify(
    'auth: no key is 401',
    [...expectThat('status', missing.status, (status) => status === 401, '401'), ...unauthorizedBodyProblems(missing.body)],
    answered(missing),
  )
  const unknown = await ctx.get('/v1/users', { limit: 0 }, `conformance-unknown-${unknownId()}`)
  ctx.verify(
    'auth: an unknown key is 401',
    [...expectThat('status', unknown.status, (status) => status === 401, '401'), ...unauthorizedBodyProblems(unknown.body)],
    answered(unknown),
  )
  const [v1, v2] = await Promise.all([ctx.get('/v1/users', { limit: 0 }), ctx.get('/v2/data-structures')])
  ctx.verify(
    'auth: the same key serves v1 and v2',
    v1.status === 200 && v2.status === 200 ? [] : [`v1 ${v1.status}, v2 ${v2.status}`],
    `v1 ${answered(v1)}, v2 ${answered(v2)}`,
  )
}

export async function discoveryChecks(ctx: CheckContext): Promise<void> {
  const answer = await ctx.get('/v2/data-structures')
  if (answer.status !== 200 || !isObject(answer.body) || !Array.isArray(answer.body.data)) {
    ctx.record('discovery: {data: [data structure]}', 'fail', `${answered(answer)}: ${JSON.stringify(answer.body).slice(0, 120)}`)
    return
  }
  const entries = answer.body.data as Row[]
  ctx.record('discovery: {data: [data structure]}', 'pass', `${entries.length} live structures`)
  const problems: Problems = []
  for (const entry of entries) {
    const label = `entry ${String(entry.id)}`
    problems.push(...expectThat(`${label} id`, entry.id, isObjectId, 'an ObjectId'))
    problems.push(
      ...expectThat(
        `${label} type`,
        entry.type,
        (type) => ['statement_reporting', 'record_reporting', 'quota'].includes(type as string),
        'a listed type',
      ),
    )
    if ('status' in entry) problems.push(...expectThat(`${label} status`, entry.status, (status) => typeof status === 'string', 'a string'))
    // A quota entry is not shown beyond type and status.
    if (entry.type === 'quota') continue
    problems.push(...expectThat(`${label} name`, entry.name, (name) => typeof name === 'string', 'a string'))
    problems.push(...expectThat(`${label} total_records`, entry.total_records, Number.isInteger, 'an integer'))
    const links = isObject(entry.links) ? entry.links : {}
    const rows = rowsPathOf({ id: String(entry.id), type: entry.type as DataStructure['type'] })
    problems.push(
      ...expectThat(
        `${label} links.fields`,
        links.fields,
        (url) => typeof url === 'string' && url.endsWith(`/v2/data-structures/${entry.id}/fields`),
        'the URL of its fields endpoint',
      ),
    )
    problems.push(
      ...expectThat(`${label} links.records`, links.records, (url) => typeof url === 'string' && url.endsWith(rows), `the URL of ${rows}`),
    )
  }
  ctx.verify('discovery: entries have the specified fields', problems, `${entries.length} entries`)
  ctx.structures = entries.filter(
    (entry) => isObjectId(entry.id) && ['statement_reporting', 'record_reporting', 'quota'].includes(entry.type as string),
  ) as DataStructure[]
  for (const type of ['statement_reporting', 'record_reporting', 'quota'] as const) {
    if (ctx.ofType(type).length === 0) ctx.record(`discovery: a ${type} structure`, 'skip', 'none listed: its checks do not run')
  }
}

export async function fieldChecks(ctx: CheckContext): Promise<void> {
  for (const structure of ctx.structures) {
    const label = `fields ${structure.type} ${structure.id}`
    const [first, second] = [
      await ctx.get(`/v2/data-structures/${structure.id}/fields`),
      await ctx.get(`/v2/data-structures/${structure.id}/fields`),
    ]
    const body = first.body as FieldSchema
    if (first.status !== 200 || !isObject(body) || !Array.isArray(body.fields)) {
      ctx.record(`${label}: {schema_hash, count, fields}`, 'fail', `${answered(first)}: ${JSON.stringify(first.body).slice(0, 120)}`)
      continue
    }
    const problems = [
      ...expectThat('schema_hash', body.schema_hash, (hash) => typeof hash === 'string' && hash !== '', 'a string'),
      ...expectThat('count', body.count, (count) => count === body.fields.length, `the number of fields (${body.fields.length})`),
      ...body.fields.flatMap(fieldProblems),
    ]
    ctx.verify(`${label}: {schema_hash, count, fields}`, problems, `${body.count} fields`)
    const unlisted = body.fields.filter((field) => LISTED_FORMATS[field.type] && !LISTED_FORMATS[field.type].includes(field.format))
    if (unlisted.length > 0)
      ctx.record(
        `${label}: formats`,
        'info',
        unlisted.map((field) => `${field.api_key}: ${field.type} ${field.format}`).join(', ') + " (not in the specification's list)",
      )
    const hash = (second.body as FieldSchema)?.schema_hash
    ctx.verify(
      `${label}: schema_hash stable across reads`,
      hash === body.schema_hash ? [] : [`${body.schema_hash} then ${hash}`],
      'same hash twice',
    )
    ctx.schemas.set(structure.id, body)
  }
  const unknown = await ctx.get(`/v2/data-structures/${unknownId()}/fields`)
  ctx.verify(
    'fields: an unknown id is 404',
    [...expectThat('status', unknown.status, (status) => status === 404, '404'), ...notFoundBodyProblems(unknown.body)],
    answered(unknown),
  )
}

/** Problems of a row of a structure against its fields and the keys the specification shows. */
function rowProblems(row: Row, structure: DataStructure, schema: FieldSchema | undefined): Problems {
  const id = String(row['standard.id'])
  const problems: Problems = [...expectThat(`${id} standard.id`, row['standard.id'], isObjectId, 'an ObjectId')]
  problems.push(...expectThat(`${id} standard.user`, row['standard.user'], isUserReference, '{id, email}'))
  if (structure.type === 'quota') {
    const keys = Object.keys(row).toSorted()
    const five = ['standard.id', 'standard.period', 'standard.source', 'standard.user', 'standard.value']
    if (keys.join() !== five.join()) problems.push(`${id} has keys ${keys.join(', ')}, expected exactly ${five.join(', ')}`)
    const fields = new Map(schema?.fields.map((field) => [field.api_key, field]))
    const frequency = fields.get('standard.period')?.frequency
    problems.push(
      ...expectThat(
        `${id} standard.period`,
        row['standard.period'],
        (period) => periodMatches(period, frequency),
        `a ${frequency ?? ''} period`,
      ),
    )
    const valueField = fields.get('standard.value')
    const amount = valueField?.format === 'currency'
    problems.push(
      ...expectThat(
        `${id} standard.value`,
        row['standard.value'],
        amount ? isObject : (value) => typeof value === 'number',
        amount ? 'an amount' : 'a number',
      ),
    )
    problems.push(
      ...expectThat(
        `${id} standard.source`,
        row['standard.source'],
        (source) => source === 'local' || source === 'integration',
        'local or integration',
      ),
    )
    return problems
  }
  problems.push(...expectThat(`${id} standard.date`, row['standard.date'], isDate, 'YYYY-MM-DD'))
  if (structure.type === 'statement_reporting') {
    problems.push(
      ...expectThat(
        `${id} standard.total_commission`,
        row['standard.total_commission'],
        (value) => valueMatchesField(value, { type: 'object', format: 'currency' }) && value !== null,
        '{value, currency}',
      ),
    )
    problems.push(
      ...expectThat(
        `${id} standard.status`,
        row['standard.status'],
        (status) => ['paid', 'pending', 'validated'].includes(status as string),
        'paid, pending or validated',
      ),
    )
  } else {
    problems.push(
      ...expectThat(
        `${id} standard.commission_impact`,
        row['standard.commission_impact'],
        (value) => valueMatchesField(value, { type: 'object', format: 'currency' }) && value !== null,
        '{value, currency}',
      ),
    )
  }
  if (schema) {
    const fields = new Map(schema.fields.map((field) => [field.api_key, field]))
    for (const [key, value] of Object.entries(row)) {
      const field = fields.get(key)
      if (!field) problems.push(`${id} has key ${key}, not a field of the structure`)
      else if (!key.startsWith('standard.') && !valueMatchesField(value, field))
        problems.push(`${id} ${key} is ${JSON.stringify(value)}, not a ${field.type} ${field.format ?? ''}`)
    }
  }
  return problems
}

async function pageOf(ctx: CheckContext, structure: DataStructure, query: Record<string, string | number | undefined>) {
  const answer = await ctx.get(rowsPathOf(structure), query)
  const body = answer.body as { data?: Row[]; meta?: Record<string, unknown> }
  return { answer, rows: Array.isArray(body?.data) ? body.data : null, meta: body?.meta }
}

export async function rowChecks(ctx: CheckContext): Promise<void> {
  for (const structure of ctx.structures) {
    const label = `rows ${structure.type} ${structure.id}`
    const { answer, rows, meta } = await pageOf(ctx, structure, { limit: 50 })
    if (answer.status !== 200 || rows === null) {
      ctx.record(`${label}: {data, meta}`, 'fail', `${answered(answer)}: ${JSON.stringify(answer.body).slice(0, 120)}`)
      continue
    }
    ctx.verify(`${label}: {data, meta}`, pageMetaProblems(meta), `${rows.length} rows in a page of 50`)
    if (rows.length === 0) ctx.record(`${label}: row shape`, 'skip', 'no row to look at')
    else
      ctx.verify(
        `${label}: row shape`,
        rows.flatMap((row) => rowProblems(row, structure, ctx.schemas.get(structure.id))),
        `${rows.length} rows`,
      )
  }
}

/** Walks a structure in small pages through `next_url` (at most PAGE_WALK_LIMIT pages) and compares with one large page. */
export async function paginationChecks(ctx: CheckContext): Promise<void> {
  for (const structure of ctx.structures) {
    const label = `pagination ${structure.type} ${structure.id}`
    const whole = await pageOf(ctx, structure, { limit: 2000 })
    if (!whole.rows) {
      ctx.record(`${label}: next_url walk`, 'fail', answered(whole.answer))
      continue
    }
    const ids = whole.rows.map((row) => String(row['standard.id']))
    if (ids.length < 2) {
      ctx.record(`${label}: next_url walk`, 'skip', `${ids.length} row: nothing to page`)
      continue
    }
    const limit = Math.max(1, Math.min(25, Math.ceil(ids.length / 4)))
    const walked: string[] = []
    const problems: Problems = []
    let next: { path: string; query?: Record<string, string> } | null = null
    let secondByStartId: string[] | null = null
    for (let page = 0; page < PAGE_WALK_LIMIT; page++) {
      const answer = next ? await ctx.get(next.path, next.query) : (await pageOf(ctx, structure, { limit })).answer
      const body = answer.body as { data?: Row[]; meta?: Record<string, unknown> }
      if (answer.status !== 200 || !Array.isArray(body?.data)) {
        problems.push(`page ${page + 1}: ${answered(answer)}`)
        break
      }
      problems.push(...pageMetaProblems(body.meta).map((problem) => `page ${page + 1}: ${problem}`))
      walked.push(...body.data.map((row) => String(row['standard.id'])))
      const meta = body.meta ?? {}
      if (!meta.has_more) break
      const nextUrl = new URL(String(meta.next_url), ctx.client.transport.baseUrl)
      next = followedNextUrl(ctx.client.transport.baseUrl, rowsPathOf(structure), nextUrl.href)
      if (nextUrl.searchParams.get('limit') !== String(limit)) problems.push(`next_url ${nextUrl.href} does not carry limit=${limit}`)
      if (page === 0) {
        const byStartId = await pageOf(ctx, structure, { limit, start_id: String(meta.next_start_id) })
        secondByStartId = byStartId.rows?.map((row) => String(row['standard.id'])) ?? []
      }
    }
    if (new Set(walked).size !== walked.length) problems.push('a row came twice')
    const prefix = ids.slice(0, walked.length)
    if (walked.join() !== prefix.join())
      problems.push(`the walk's ${walked.length} rows differ from the first ${walked.length} of one page of 2000`)
    if (walked.length < PAGE_WALK_LIMIT * limit && ids.length < 2000 && walked.length !== ids.length) {
      problems.push(`the walk ended after ${walked.length} rows, one page has ${ids.length}`)
    }
    if (secondByStartId && secondByStartId.join() !== walked.slice(limit, 2 * limit).join())
      problems.push('start_id=next_start_id does not give the page next_url gives')
    ctx.verify(`${label}: next_url walk`, problems, `${walked.length} rows in pages of ${limit}, same as one page of 2000`)
    if (structure.type === 'quota') {
      const sorted = ids.toSorted((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1))
      ctx.verify(`${label}: rows in id order`, ids.join() === sorted.join() ? [] : ['rows are not in id order'], `${ids.length} rows`)
    }
    await filterChecks(ctx, structure, ids)
  }
}

/** `last_modified_after` / `before`: bounds that exclude every row, bounds that include them all, and next_url carrying them. */
async function filterChecks(ctx: CheckContext, structure: DataStructure, ids: string[]): Promise<void> {
  const label = `filters ${structure.type} ${structure.id}`
  const future = await pageOf(ctx, structure, { limit: 2000, last_modified_after: FAR_FUTURE })
  const past = await pageOf(ctx, structure, { limit: 2000, last_modified_before: FAR_PAST })
  const wide = await pageOf(ctx, structure, { limit: 2000, last_modified_after: FAR_PAST, last_modified_before: FAR_FUTURE })
  const problems: Problems = []
  if (future.rows?.length !== 0) problems.push(`after ${FAR_FUTURE}: ${future.rows?.length ?? answered(future.answer)} rows`)
  if (past.rows?.length !== 0) problems.push(`before ${FAR_PAST}: ${past.rows?.length ?? answered(past.answer)} rows`)
  if (wide.rows?.map((row) => String(row['standard.id'])).join() !== ids.join())
    problems.push(`between ${FAR_PAST} and ${FAR_FUTURE}: not every row (${wide.rows?.length ?? answered(wide.answer)})`)
  ctx.verify(`${label}: last_modified_after and last_modified_before`, problems, 'none after 2999, none before 1971, all between')
  const carried = await pageOf(ctx, structure, { limit: 1, last_modified_after: FAR_PAST, last_modified_before: FAR_FUTURE })
  if (ids.length >= 2 && isObject(carried.meta) && typeof carried.meta.next_url === 'string') {
    const params = new URL(carried.meta.next_url, ctx.client.transport.baseUrl).searchParams
    const missing = ['limit', 'last_modified_after', 'last_modified_before'].filter((name) => !params.has(name))
    ctx.verify(
      `${label}: next_url carries the limit and the date filters`,
      missing.map((name) => `next_url lacks ${name}`),
      carried.meta.next_url,
    )
  }
}

/** Bounds and error bodies of the v2 row endpoints, once per kind of structure present. */
export async function boundChecks(ctx: CheckContext): Promise<void> {
  for (const type of ['statement_reporting', 'record_reporting', 'quota'] as const) {
    const [structure] = ctx.ofType(type)
    if (!structure) continue
    const label = `bounds ${type}`
    for (const [query, resource] of [
      [{ limit: 2001 }, 'limit'],
      [{ limit: 0 }, 'limit'],
      [{ start_id: 'not-an-object-id' }, 'start_id'],
    ] as const) {
      const answer = await ctx.get(rowsPathOf(structure), query)
      ctx.verify(
        `${label}: ${new URLSearchParams(query as Record<string, string>)} is 400 naming ${resource}`,
        [...expectThat('status', answer.status, (status) => status === 400, '400'), ...validationBodyProblems(answer.body, resource)],
        answered(answer),
      )
    }
    const most = await ctx.get(rowsPathOf(structure), { limit: 2000 })
    ctx.verify(
      `${label}: limit=2000 is accepted`,
      expectThat('status', most.status, (status) => status === 200, '200'),
      answered(most),
    )
    const unknown = await ctx.get(rowsPathOf({ id: unknownId(), type }))
    ctx.verify(
      `${label}: an unknown id is 404`,
      [...expectThat('status', unknown.status, (status) => status === 404, '404'), ...notFoundBodyProblems(unknown.body)],
      answered(unknown),
    )
  }
  await quotaRuleChecks(ctx)
}

async function quotaRuleChecks(ctx: CheckContext): Promise<void> {
  const [quota] = ctx.ofType('quota')
  if (!quota) return
  const path = rowsPathOf(quota)
  const instant = '2026-01-01T00:00:00Z'
  for (const [name, query] of [
    ['equal date bounds', { last_modified_after: instant, last_modified_before: instant }],
    ['last_modified_after later than last_modified_before', { last_modified_after: '2026-02-01T00:00:00Z', last_modified_before: instant }],
  ] as const) {
    const answer = await ctx.get(path, query)
    ctx.verify(
      `quota values: ${name} is 400`,
      [...expectThat('status', answer.status, (status) => status === 400, '400'), ...validationBodyProblems(answer.body)],
      answered(answer),
    )
  }
  const [defaulted, explicit] = [await ctx.get(path), await ctx.get(path, { limit: 2000 })]
  const count = (answer: typeof defaulted) => ((answer.body as { data?: unknown[] })?.data ?? []).length
  ctx.verify(
    'quota values: default limit is 2000',
    count(defaulted) === count(explicit) ? [] : [`${count(defaulted)} rows without limit, ${count(explicit)} with limit=2000`],
    `${count(defaulted)} rows either way`,
  )
  const [table] = [...ctx.ofType('statement_reporting'), ...ctx.ofType('record_reporting')]
  if (table) {
    const answer = await ctx.get(`/v2/quotas/${table.id}/values`)
    ctx.verify(
      'quota values: a reporting table id is 404',
      [...expectThat('status', answer.status, (status) => status === 404, '404'), ...notFoundBodyProblems(answer.body)],
      answered(answer),
    )
  }
}

const USER_KEYS = ['id', 'email', 'name', 'status', 'role', 'currency', 'calculation_currency']
const STATEMENT_ROW_KEYS = [
  'id',
  'date',
  'plan',
  'user',
  'payment',
  'payment_currency',
  'target',
  'target_currency',
  'target_achievement',
  'on_target_earning',
  'on_target_earning_currency',
  'achievement',
  'achievement_currency',
]
const REPORTING_USER_KEYS = ['id', 'email', 'name', 'role', 'currency', 'calculation_currency', 'country', 'code']

function envelopeProblems(body: unknown): Problems {
  if (!isObject(body)) return [`body is ${JSON.stringify(body)?.slice(0, 80)}`]
  return [
    ...expectThat('count', body.count, Number.isInteger, 'an integer'),
    ...expectThat('data', body.data, Array.isArray, 'an array'),
    ...expectThat('next', body.next, (next) => next === null || typeof next === 'string', 'a URL (or null after the last page)'),
  ]
}

const missingKeys = (row: unknown, keys: string[], label: string): Problems =>
  isObject(row) ? keys.filter((key) => !(key in row)).map((key) => `${label} lacks ${key}`) : [`${label} is not an object`]

/** v1 lists: users, the deprecated statements read, and a data table's records when `--table` names one. */
export async function v1ListChecks(ctx: CheckContext): Promise<void> {
  const users = await ctx.get('/v1/users', { limit: 2000 })
  const rows = (isObject(users.body) && Array.isArray(users.body.data) ? users.body.data : []) as Row[]
  ctx.verify(
    'v1 users: {count, data, next}',
    users.status === 200 ? envelopeProblems(users.body) : [answered(users)],
    `${rows.length} users`,
  )
  ctx.verify(
    'v1 users: standard fields',
    rows.flatMap((user) => [
      ...missingKeys(user, USER_KEYS, `user ${String(user.id)}`),
      ...expectThat(
        `user ${String(user.id)} status`,
        user.status,
        (status) => ['active', 'archived', 'inactive', 'pending'].includes(status as string),
        'a listed status',
      ),
    ]),
    `${rows.length} users`,
  )
  const countOnly = await ctx.get('/v1/users', { limit: 0 })
  const countBody = countOnly.body as { count?: unknown; data?: unknown[] }
  ctx.verify(
    'v1 users: limit=0 answers only the count',
    countOnly.status === 200 && countBody?.data?.length === 0 && Number.isInteger(countBody.count)
      ? []
      : [`${answered(countOnly)} ${JSON.stringify(countOnly.body).slice(0, 80)}`],
    `count ${String(countBody?.count)}`,
  )
  const tooMany = await ctx.get('/v1/users', { limit: 2001 })
  ctx.verify(
    'v1 users: limit=2001 is 400',
    [...expectThat('status', tooMany.status, (status) => status === 400, '400'), ...validationBodyProblems(tooMany.body, 'limit')],
    answered(tooMany),
  )
  const farOffset = await ctx.get('/v1/users', { offset: '9223372036854775807', limit: 10 })
  ctx.verify(
    'v1 users: offset=9223372036854775807 is accepted',
    farOffset.status === 200 && (farOffset.body as { data?: unknown[] })?.data?.length === 0 ? [] : [answered(farOffset)],
    answered(farOffset),
  )
  await offsetWalkCheck(
    ctx,
    'v1 users',
    '/v1/users',
    rows.map((user) => String(user.id)),
  )

  const reporting = await ctx.get('/v1/reporting', { limit: 50 })
  const statements = (isObject(reporting.body) && Array.isArray(reporting.body.data) ? reporting.body.data : []) as Row[]
  ctx.verify(
    'v1 reporting (deprecated): {count, data, next}',
    reporting.status === 200 ? envelopeProblems(reporting.body) : [answered(reporting)],
    `${statements.length} rows`,
  )
  ctx.verify(
    'v1 reporting (deprecated): row fields',
    statements.flatMap((row) => [
      ...missingKeys(row, STATEMENT_ROW_KEYS, `row ${String(row.id)}`),
      ...missingKeys(row.user, REPORTING_USER_KEYS, `row ${String(row.id)} user`),
    ]),
    `${statements.length} rows`,
  )
  if (reporting.headers.deprecation !== undefined)
    ctx.record('v1 reporting (deprecated): headers', 'info', `Deprecation: ${String(reporting.headers.deprecation)}`)

  const unknownImport = await ctx.get(`/v1/imports/${unknownId()}`)
  ctx.verify(
    'v1 imports: an unknown id is 404',
    [...expectThat('status', unknownImport.status, (status) => status === 404, '404'), ...notFoundBodyProblems(unknownImport.body)],
    answered(unknownImport),
  )

  const table = ctx.options.table
  if (!table) {
    ctx.record('v1 table records', 'skip', 'give --table KEY to check a data table')
    return
  }
  const records = await ctx.get(`/v1/tables/${encodeURIComponent(table)}/records`, { limit: 2000 })
  const recordRows = (isObject(records.body) && Array.isArray(records.body.data) ? records.body.data : []) as Row[]
  ctx.verify(
    `v1 table ${table}: {count, data, next}`,
    records.status === 200 ? envelopeProblems(records.body) : [answered(records)],
    `${recordRows.length} records`,
  )
  const identity = (row: Row) => JSON.stringify(row)
  await offsetWalkCheck(ctx, `v1 table ${table}`, `/v1/tables/${encodeURIComponent(table)}/records`, recordRows.map(identity), identity)
}

/** Walks a v1 list by offset in small pages (bounded) and compares with one large page. */
async function offsetWalkCheck(
  ctx: CheckContext,
  label: string,
  path: string,
  expected: string[],
  keyOf: (row: Row) => string = (row) => String(row.id),
) {
  if (expected.length < 2) return
  const limit = Math.max(1, Math.min(25, Math.ceil(expected.length / 4)))
  const walked: string[] = []
  for (let page = 0; page < PAGE_WALK_LIMIT && walked.length < expected.length; page++) {
    const answer = await ctx.get(path, { offset: walked.length, limit })
    const rows = (answer.body as { data?: Row[] })?.data
    if (answer.status !== 200 || !Array.isArray(rows) || rows.length === 0) break
    walked.push(...rows.map(keyOf))
  }
  const prefix = expected.slice(0, walked.length)
  ctx.verify(
    `${label}: offset walk`,
    walked.length > 0 && walked.join('\n') === prefix.join('\n') ? [] : [`${walked.length} rows by offset differ from one large page`],
    `${walked.length} rows in pages of ${limit}`,
  )
}
