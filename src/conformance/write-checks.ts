import type { ImportRecord } from '../client/index.ts'
import { answered, type CheckContext } from './context.ts'
import { expectThat, isObject, type Problems, validationBodyProblems } from './shapes.ts'

/**
 * The `--write` checks: upserts and their imports, the user rules, attributions as imports of their own, and
 * archiving. They create users named conformance-…@example.com and archive them, in the company of the key:
 * only for a test company.
 */

type Row = Record<string, unknown>

export const WRITE_WARNING =
  'conformance --write creates, updates and archives users (conformance-…@example.com) and re-imports one record of --table ' +
  'in the company of the key: use it only on a test company.'

function receiptProblems(body: unknown, count: number): Problems {
  if (!isObject(body)) return [`body is ${JSON.stringify(body)?.slice(0, 80)}`]
  return [
    ...expectThat('import_id', body.import_id, (id) => typeof id === 'string' && id !== '', 'a string'),
    ...expectThat('objects_imported', body.objects_imported, (objects) => objects === count, String(count)),
  ]
}

async function userByEmail(ctx: CheckContext, email: string): Promise<Row[]> {
  const found: Row[] = []
  for await (const user of ctx.client.users()) if (String(user.email).toLowerCase() === email.toLowerCase()) found.push(user)
  return found
}

/** The outcome of an import that should finish: `null` when it does not finish in time. */
async function finished(ctx: CheckContext, importId: string): Promise<ImportRecord | null> {
  try {
    return await ctx.client.waitForImport(importId, { timeoutMs: 60_000, intervalMs: 100, maxIntervalMs: 2_000 })
  } catch {
    return null
  }
}

const describeImport = (record: ImportRecord | null) =>
  record
    ? `import ${record.id} ${record.status}, error ${record.error}${record.error ? `: ${JSON.stringify(record.data_tables_details.map((detail) => detail.error))}`.slice(0, 200) : ''}`
    : 'the import did not finish within 60 s'

/** Upserts a payload and waits for its import; records the receipt check under `label`. */
async function upsertUsers(ctx: CheckContext, label: string, users: Row[], query: Record<string, number> = {}) {
  const answer = await ctx.send('PUT', '/v1/users/bulk', { data: users }, query)
  ctx.verify(
    `${label}: 200 {import_id, objects_imported}`,
    answer.status === 200 ? receiptProblems(answer.body, users.length) : [answered(answer)],
    answered(answer),
  )
  const importId = (answer.body as { import_id?: string })?.import_id
  return { answer, importId }
}

export async function writeChecks(ctx: CheckContext): Promise<void> {
  const stamp = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`
  const manager = `conformance-${stamp}-a@example.com`
  const member = `conformance-${stamp}-b@example.com`

  // Creation, and an import that finishes without error.
  const created = await upsertUsers(ctx, 'users upsert', [
    { email: manager, name: 'Conformance Manager', role: 'conformance' },
    { email: member, name: 'Conformance Member', role: 'conformance' },
  ])
  if (!created.importId) return
  const createdImport = await finished(ctx, created.importId)
  ctx.verify(
    'users upsert: the import finishes without error',
    createdImport?.status === 'finished' && createdImport.error === false ? [] : [describeImport(createdImport)],
    describeImport(createdImport),
  )
  const [listed] = await userByEmail(ctx, manager)
  ctx.verify(
    'users upsert: the user is listed',
    listed?.name === 'Conformance Manager' ? [] : [`listed as ${JSON.stringify(listed)?.slice(0, 120)}`],
    String(listed?.id),
  )

  // Matched by email case-insensitively; a field left out is unchanged, null empties it.
  const updated = await upsertUsers(ctx, 'users update', [{ email: manager.toUpperCase(), role: null }])
  const updatedImport = updated.importId ? await finished(ctx, updated.importId) : null
  const matches = await userByEmail(ctx, manager)
  ctx.verify(
    'users update: matched by email in any case; left out unchanged, null empties',
    updatedImport?.error === false && matches.length === 1 && matches[0].name === 'Conformance Manager' && matches[0].role === null
      ? []
      : [`${describeImport(updatedImport)}; ${matches.length} users with that email: ${JSON.stringify(matches).slice(0, 160)}`],
    'one user, name kept, role null',
  )

  // A repeated email: the first is upserted, the later one skipped and reported.
  const repeated = await upsertUsers(ctx, 'users repeated email', [
    { email: member, name: 'First of two' },
    { email: member.toUpperCase(), name: 'Second of two' },
  ])
  const repeatedImport = repeated.importId ? await finished(ctx, repeated.importId) : null
  const details = repeatedImport?.data_tables_details.flatMap((detail) => detail.error?.parsing_error_details ?? []) ?? []
  const reported = details.some(
    (detail) => /^email: duplicated \(.+\)$/i.test(detail.details) && detail.details.toLowerCase().includes(member),
  )
  const [memberNow] = await userByEmail(ctx, member)
  ctx.verify(
    'users repeated email: first kept, later one reported "email: duplicated (<email>)"',
    reported && memberNow?.name === 'First of two'
      ? []
      : [`${describeImport(repeatedImport)}; user name ${JSON.stringify(memberNow?.name)}`],
    JSON.stringify(details[0]?.details),
  )

  // All or nothing: an invalid user refuses the whole call at import time.
  const absent = `conformance-${stamp}-c@example.com`
  const refused = await upsertUsers(ctx, 'users all-or-nothing', [
    { email: absent, name: 'Never upserted' },
    { email: `conformance-${stamp}-d@example.com`, arrival_date: 'not-a-date' },
  ])
  const refusedImport = refused.importId ? await finished(ctx, refused.importId) : null
  const titles = refusedImport?.data_tables_details.map((detail) => detail.error?.title) ?? []
  const leaked = await userByEmail(ctx, absent)
  ctx.verify(
    'users all-or-nothing: an invalid arrival_date fails the import (ValidationError), nobody upserted',
    refusedImport?.error === true && titles.includes('ValidationError') && leaked.length === 0
      ? []
      : [`${describeImport(refusedImport)}; ${leaked.length} upserted`],
    describeImport(refusedImport),
  )

  const tooMany = await ctx.send('PUT', '/v1/users/bulk', {
    data: Array.from({ length: 201 }, (_, index) => ({ email: `conformance-${stamp}-${index}@example.com` })),
  })
  ctx.verify(
    'users upsert: 201 users is 400 naming data',
    [...expectThat('status', tooMany.status, (status) => status === 400, '400'), ...validationBodyProblems(tooMany.body, 'data')],
    answered(tooMany),
  )
  const malformed = await ctx.client.transport.raw({
    method: 'PUT',
    path: '/v1/users/bulk',
    body: '{"data": [',
    headers: { 'content-type': 'application/json' },
  })
  ctx.verify(
    'users upsert: a malformed body is 400',
    [...expectThat('status', malformed.status, (status) => status === 400, '400'), ...validationBodyProblems(malformed.body)],
    answered(malformed),
  )

  const attributed = await debounceChecks(ctx, manager, member)
  await archiveChecks(ctx, manager, member, attributed)
  await recordChecks(ctx)
}

const importIdOf = (answer: { body: unknown }) => (answer.body as { import_id?: string })?.import_id

/**
 * Calls to one endpoint in a debounce window share an import; attributions get imports of their own. The
 * attribution routes' request shapes are not shown: a service that refuses ours is not wrong, and the rule cannot
 * be checked on it. Resolves with whether the manager attribution was taken (the archive's manager rule needs it).
 */
async function debounceChecks(ctx: CheckContext, manager: string, member: string): Promise<boolean> {
  const first = await ctx.send('PUT', '/v1/users/bulk', { data: [{ email: member, name: 'Conformance Member' }] }, { debounce: 2 })
  const second = await ctx.send('PUT', '/v1/users/bulk', { data: [{ email: manager, name: 'Conformance Manager' }] }, { debounce: 2 })
  const managers = await ctx.send('PUT', '/v1/users/managers/bulk', { data: [{ user: member, manager, start_date: currentMonth() }] })
  const groups = await ctx.send('PUT', '/v1/users/groups/bulk', {
    data: [{ user: member, group_dimension: 'conformance', group: 'Conformance', start_date: currentMonth() }],
  })
  ctx.verify(
    'debounce: calls to the same endpoint in the window share an import',
    importIdOf(first) && importIdOf(first) === importIdOf(second) ? [] : [`${importIdOf(first)} then ${importIdOf(second)}`],
    String(importIdOf(first)),
  )
  const ids = [importIdOf(first), importIdOf(managers), importIdOf(groups)]
  if (managers.status === 200 && groups.status === 200) {
    ctx.verify(
      'attributions: users, managers and groups each get their own import',
      new Set(ids).size === 3 ? [] : [`imports ${ids.join(', ')}`],
      ids.join(', '),
    )
  } else {
    ctx.record(
      'attributions: users, managers and groups each get their own import',
      'skip',
      `the attribution request shapes are not shown, and this service refused ours: managers ${answered(managers)}, groups ${answered(groups)}`,
    )
  }
  for (const importId of ids) if (importId) await finished(ctx, importId)
  return managers.status === 200
}

function currentMonth(): string {
  return new Date().toISOString().slice(0, 7)
}

/** An archive refusal: its status is not shown, so any 4xx, with the list body and an error of `family` naming `resource`. */
function refusal(answer: { status: number; body: unknown }, family: string, resource: string): Problems {
  const problems = [
    ...expectThat('status', answer.status, (status) => (status as number) >= 400 && (status as number) < 500, 'a 4xx'),
    ...validationBodyProblems(answer.body, resource),
  ]
  const errors = (answer.body as { errors?: Array<{ error?: string }> })?.errors ?? []
  if (!errors.some((item) => item.error === family)) problems.push(`no error of family ${family}: ${JSON.stringify(errors).slice(0, 120)}`)
  return problems
}

/** Archive: errors (status not shown: any 4xx, with the list body), all or nothing, the manager rule, success. */
async function archiveChecks(ctx: CheckContext, manager: string, member: string, attributed: boolean): Promise<void> {
  const archive = (data: unknown[]) => ctx.send('DELETE', '/v1/users/archive/bulk', { data })
  const unknownUser = await archive([{ user: `conformance-nobody-${Date.now()}@example.com` }])
  ctx.verify(
    'archive: an unknown user is NotFoundError (resource user)',
    refusal(unknownUser, 'NotFoundError', 'user'),
    answered(unknownUser),
  )
  ctx.record('archive: status of a refusal', 'info', `${unknownUser.status} for an unknown user (the specification does not show it)`)
  const badDate = await archive([{ user: member, end_date: '2026-13' }])
  ctx.verify(
    'archive: a wrong end_date is ValidationError (resource end_date)',
    refusal(badDate, 'ValidationError', 'end_date'),
    answered(badDate),
  )
  const tooMany = await archive(Array.from({ length: 51 }, (_, index) => ({ user: `conformance-${index}@example.com` })))
  ctx.verify(
    'archive: 51 users is refused',
    [
      ...expectThat('status', tooMany.status, (status) => (status as number) >= 400 && (status as number) < 500, 'a 4xx'),
      ...validationBodyProblems(tooMany.body),
    ],
    answered(tooMany),
  )

  const mixed = await archive([{ user: member }, { user: `conformance-nobody-${Date.now()}@example.com` }])
  const [memberAfter] = await userByEmail(ctx, member)
  ctx.verify(
    'archive: all or nothing',
    mixed.status >= 400 && memberAfter?.status !== 'archived' ? [] : [`${answered(mixed)}; member is ${String(memberAfter?.status)}`],
    `${answered(mixed)}, nobody archived`,
  )

  if (attributed) {
    const conflict = await archive([{ user: manager }])
    const [managerAfter] = await userByEmail(ctx, manager)
    ctx.verify(
      'archive: a user who manages someone in the archive period is refused',
      conflict.status >= 400 && conflict.status < 500 && managerAfter?.status !== 'archived'
        ? []
        : [`${answered(conflict)}; manager is ${String(managerAfter?.status)}`],
      answered(conflict),
    )
  } else {
    ctx.record('archive: a user who manages someone in the archive period is refused', 'skip', 'no manager attribution was taken')
  }

  const archived = await archive([{ user: member, end_date: currentMonth() }])
  const [memberArchived] = await userByEmail(ctx, member)
  ctx.verify(
    'archive: 200 {message}, the user is archived',
    archived.status === 200 &&
      typeof (archived.body as { message?: unknown })?.message === 'string' &&
      memberArchived?.status === 'archived'
      ? []
      : [`${answered(archived)} ${JSON.stringify(archived.body).slice(0, 80)}; status ${String(memberArchived?.status)}`],
    answered(archived),
  )
  // The member stays active up to this month: the manager's archive period starts after it, so nobody active reports to them.
  const last = await archive([{ user: manager, end_date: currentMonth() }])
  ctx.verify(
    'archive: the manager, once nobody active reports to them',
    last.status === 200 ? [] : [`${answered(last)} ${JSON.stringify(last.body).slice(0, 120)}`],
    answered(last),
  )
}

/** With `--table`: one record read and upserted again as it is, an import that changes nothing. */
async function recordChecks(ctx: CheckContext): Promise<void> {
  const table = ctx.options.table
  if (!table) {
    ctx.record('table records upsert', 'skip', 'give --table KEY to check a data table')
    return
  }
  const path = `/v1/tables/${encodeURIComponent(table)}/records`
  const read = await ctx.get(path, { limit: 1 })
  const [record] = ((read.body as { data?: Row[] })?.data ?? []) as Row[]
  if (!record) {
    ctx.record('table records upsert', 'skip', `${table} has no record to upsert again`)
    return
  }
  const answer = await ctx.send('POST', `${path}/bulk`, [record])
  ctx.verify(
    'table records upsert: 200 {import_id, objects_imported}',
    answer.status === 200 ? receiptProblems(answer.body, 1) : [answered(answer)],
    answered(answer),
  )
  const importId = (answer.body as { import_id?: string })?.import_id
  const outcome = importId ? await finished(ctx, importId) : null
  const after = ((await ctx.get(path, { limit: 1 })).body as { data?: Row[] })?.data?.[0]
  ctx.verify(
    'table records upsert: a record sent back as read is applied without error and unchanged',
    outcome?.error === false && JSON.stringify(after) === JSON.stringify(record) ? [] : [describeImport(outcome)],
    describeImport(outcome),
  )
}
