import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type ImportHarness, startImportHarness } from './imports-support.ts'

let h: ImportHarness
let ids: Record<string, string>
beforeEach(async () => {
  h = await startImportHarness()
  const users = await h.store.users.findByEmails(h.companyId, ['owner@acme.example', 'rep@acme.example', 'gone@acme.example'])
  ids = { owner: users.get('owner@acme.example')!.id, rep: users.get('rep@acme.example')!.id, gone: users.get('gone@acme.example')!.id }
})
afterEach(async () => {
  await h.close()
})

async function imported(kind: 'managers' | 'groups', data: unknown[]): Promise<any> {
  const reply = await h.call(`/v1/users/${kind}/bulk`, { method: 'PUT', body: { data } })
  expect(reply.status).toBe(200)
  expect(reply.body).toStrictEqual({
    import_id: expect.stringMatching(/^[0-9a-f]{24}$/),
    objects_imported: data.length,
    count: data.length,
    data,
  })
  await h.drain()
  const result = await h.importOf(reply.body.import_id)
  expect(result.status).toBe('finished')
  return result
}

const managers = async () =>
  (await h.store.attributions.listManagers(h.companyId))
    .map(({ user_id, manager_id, start_month, end_month }) => ({ user_id, manager_id, start_month, end_month }))
    .toSorted((a, b) => (a.start_month ?? '').localeCompare(b.start_month ?? ''))

const groups = async () =>
  (await h.store.attributions.listGroups(h.companyId))
    .map(({ user_id, group_dimension, group, start_month, end_month }) => ({ user_id, group_dimension, group, start_month, end_month }))
    .toSorted((a, b) => `${a.group_dimension}${a.start_month ?? ''}`.localeCompare(`${b.group_dimension}${b.start_month ?? ''}`))

describe('PUT /v1/users/managers/bulk', () => {
  it('sets managers by email over months, as its own import', async () => {
    const result = await imported('managers', [
      { user: 'REP@acme.example', manager: 'owner@acme.example', start_date: '2026-01', end_date: '2026-06' },
      { user: 'owner@acme.example', manager: 'gone@acme.example', start_date: '2025-01', end_date: null },
    ])
    expect(result.error).toBe(false)
    expect(result.data_tables_details).toStrictEqual([
      { type: 'api', status: 'finished', data_table_key: 'managers', progress: 100, number_of_records: 2, error: null, ignored_keys: [] },
    ])
    expect(await managers()).toStrictEqual([
      { user_id: ids.owner, manager_id: ids.gone, start_month: '2025-01', end_month: null },
      { user_id: ids.rep, manager_id: ids.owner, start_month: '2026-01', end_month: '2026-06' },
    ])
  })

  it('lets new months override the stored ones they overlap, and keeps the rest', async () => {
    await imported('managers', [{ user: 'rep@acme.example', manager: 'owner@acme.example', start_date: '2026-01', end_date: null }])
    await imported('managers', [{ user: 'rep@acme.example', manager: 'gone@acme.example', start_date: '2026-04', end_date: '2026-05' }])
    expect(await managers()).toStrictEqual([
      { user_id: ids.rep, manager_id: ids.owner, start_month: '2026-01', end_month: '2026-03' },
      { user_id: ids.rep, manager_id: ids.gone, start_month: '2026-04', end_month: '2026-05' },
      { user_id: ids.rep, manager_id: ids.owner, start_month: '2026-06', end_month: null },
    ])
    // manager null: no manager in those months.
    await imported('managers', [{ user: 'rep@acme.example', manager: null, start_date: '2026-01', end_date: '2026-04' }])
    expect(await managers()).toStrictEqual([
      { user_id: ids.rep, manager_id: ids.gone, start_month: '2026-05', end_month: '2026-05' },
      { user_id: ids.rep, manager_id: ids.owner, start_month: '2026-06', end_month: null },
    ])
  })

  it('names a users import still in its debounce window when an item names a user it would create', async () => {
    const users = await h.call('/v1/users/bulk?debounce=300', { method: 'PUT', body: { data: [{ email: 'fresh@acme.example' }] } })
    expect(users.status).toBe(200)
    const early = await imported('managers', [{ user: 'fresh@acme.example', manager: 'owner@acme.example', start_date: '2026-01' }])
    expect(early.error).toBe(true)
    expect(early.data_tables_details[0].error.description).toContain(
      `user: no user with email fresh@acme.example (users import ${users.body.import_id}, which creates that user, is still scheduled`,
    )
    // A user that waiting import does not create (a typo) is not told to wait for it.
    const typo = await imported('managers', [{ user: 'frseh@acme.example', manager: 'owner@acme.example', start_date: '2026-01' }])
    expect(typo.data_tables_details[0].error.description).toContain('no user with email frseh@acme.example')
    expect(typo.data_tables_details[0].error.description).not.toContain('still scheduled')

    // Once it is applied, the same call goes through; and a user no import creates is refused without the hint.
    h.server.clock.advance(300_000)
    await h.drain()
    const later = await imported('managers', [{ user: 'fresh@acme.example', manager: 'owner@acme.example', start_date: '2026-01' }])
    expect(later.error).toBe(false)
    const unknown = await imported('managers', [{ user: 'ghost@acme.example', manager: 'owner@acme.example', start_date: '2026-01' }])
    expect(unknown.data_tables_details[0].error.description).toContain('no user with email ghost@acme.example')
    expect(unknown.data_tables_details[0].error.description).not.toContain('still scheduled')
  })

  it.each([
    [
      [{ user: 'nobody@acme.example', manager: 'owner@acme.example', start_date: '2026-01' }],
      'user: no user with email nobody@acme.example',
    ],
    [
      [{ user: 'rep@acme.example', manager: 'nobody@acme.example', start_date: '2026-01' }],
      'manager: no user with email nobody@acme.example',
    ],
    [[{ user: 'rep@acme.example', manager: 'owner@acme.example', start_date: '2026-1' }], 'start_date: expected a month YYYY-MM'],
    [
      [{ user: 'rep@acme.example', manager: 'owner@acme.example', start_date: '2026-05', end_date: '2026-04' }],
      'end_date: before start_date',
    ],
    [[{ user: 'rep@acme.example', manager: 'rep@acme.example', start_date: '2026-05' }], 'manager: a user cannot be their own manager'],
    [
      [
        { user: 'rep@acme.example', manager: 'owner@acme.example', start_date: '2026-01', end_date: '2026-06' },
        { user: 'rep@acme.example', manager: 'gone@acme.example', start_date: '2026-06' },
      ],
      'user: already given on line 2',
    ],
    // Two items for one user are refused whatever their months, as the real documentation says.
    [
      [
        { user: 'rep@acme.example', manager: 'owner@acme.example', start_date: '2026-01', end_date: '2026-03' },
        { user: 'REP@acme.example', manager: 'gone@acme.example', start_date: '2026-07' },
      ],
      'user: already given on line 2',
    ],
  ])('refuses the whole call, applying none of it: %j', async (data, details) => {
    await imported('managers', [{ user: 'owner@acme.example', manager: 'gone@acme.example', start_date: '2025-01' }])
    const before = await managers()
    const result = await imported('managers', [{ user: 'owner@acme.example', manager: 'rep@acme.example', start_date: '2026-01' }, ...data])
    expect(result.error).toBe(true)
    const error = result.data_tables_details[0].error
    expect(result.data_tables_details[0].number_of_records).toBeNull()
    expect(error.title).toBe('ValidationError')
    expect(error.description).toContain(details)
    expect(error.parsing_error_details.at(-1)).toMatchObject({ line_number: data.length + 1, details: expect.stringContaining(details) })
    expect(await managers()).toStrictEqual(before)
  })

  it('reads a missing or null start_date as an open start (from the beginning), which later months cut', async () => {
    await imported('managers', [
      { user: 'rep@acme.example', manager: 'owner@acme.example' },
      { user: 'owner@acme.example', manager: 'gone@acme.example', start_date: null, end_date: '2025-12' },
    ])
    expect(await managers()).toStrictEqual([
      { user_id: ids.rep, manager_id: ids.owner, start_month: null, end_month: null },
      { user_id: ids.owner, manager_id: ids.gone, start_month: null, end_month: '2025-12' },
    ])
    await imported('managers', [{ user: 'rep@acme.example', manager: 'gone@acme.example', start_date: '2026-03', end_date: '2026-04' }])
    expect((await managers()).filter((item) => item.user_id === ids.rep)).toStrictEqual([
      { user_id: ids.rep, manager_id: ids.owner, start_month: null, end_month: '2026-02' },
      { user_id: ids.rep, manager_id: ids.gone, start_month: '2026-03', end_month: '2026-04' },
      { user_id: ids.rep, manager_id: ids.owner, start_month: '2026-05', end_month: null },
    ])
    // An open start overrides every earlier month of the stored periods.
    await imported('managers', [{ user: 'rep@acme.example', manager: null, end_date: '2026-03' }])
    expect((await managers()).filter((item) => item.user_id === ids.rep)).toStrictEqual([
      { user_id: ids.rep, manager_id: ids.gone, start_month: '2026-04', end_month: '2026-04' },
      { user_id: ids.rep, manager_id: ids.owner, start_month: '2026-05', end_month: null },
    ])
  })

  it('refuses a manager archived by the archive call over months in which the person managed is active: the archive rule, from this side', async () => {
    // The harness's clock is at 2026-06: rep is archived from 2026-07 (owner holds the harness's key).
    const archived = await h.call('/v1/users/archive/bulk', {
      method: 'DELETE',
      body: { data: [{ user: 'rep@acme.example', end_date: '2026-06' }] },
    })
    expect(archived.status).toBe(200)
    const row = { user: 'owner@acme.example', manager: 'rep@acme.example', start_date: '2026-08' }
    const refused = await imported('managers', [row])
    expect(refused.error).toBe(true)
    expect(refused.data_tables_details[0].error.parsing_error_details).toStrictEqual([
      { line_number: 1, row, details: 'manager: rep@acme.example is archived from 2026-07, in months owner@acme.example is active in' },
    ])
    expect(await managers()).toStrictEqual([])

    // Before the archive period there is nothing to refuse.
    const before = await imported('managers', [
      { user: 'owner@acme.example', manager: 'rep@acme.example', start_date: '2026-01', end_date: '2026-06' },
    ])
    expect(before.error).toBe(false)
    expect(await managers()).toStrictEqual([{ user_id: ids.owner, manager_id: ids.rep, start_month: '2026-01', end_month: '2026-06' }])
  })

  it('refuses more than 200 items, or a malformed body, with 400 on resource data', async () => {
    const item = { user: 'rep@acme.example', manager: 'owner@acme.example', start_date: '2026-01' }
    // One item where the array goes is refused too.
    for (const body of [{ data: Array.from({ length: 201 }, () => item) }, { data: 'x' }, { data: item }, {}, [item], '{"data": [']) {
      const reply = await h.call('/v1/users/managers/bulk', {
        method: 'PUT',
        body: typeof body === 'string' ? body : JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      })
      expect(reply.status).toBe(400)
      expect(reply.body.errors[0]).toMatchObject({ error: 'ValidationError', resource: 'data' })
    }
    expect(await h.drain()).toBe(0)
  })
})

describe('PUT /v1/users/groups/bulk', () => {
  it('keeps one group per dimension per month: new months override, other dimensions stay', async () => {
    await imported('groups', [
      { user: 'rep@acme.example', group_dimension: 'team', group: 'North', start_date: '2026-01', end_date: null },
      { user: 'rep@acme.example', group_dimension: 'region', group: 'EMEA', start_date: '2026-01', end_date: null },
    ])
    const result = await imported('groups', [{ user: 'rep@acme.example', group_dimension: 'team', group: 'South', start_date: '2026-03' }])
    expect(result.data_tables_details[0]).toMatchObject({ data_table_key: 'groups', error: null })
    expect(await groups()).toStrictEqual([
      { user_id: ids.rep, group_dimension: 'region', group: 'EMEA', start_month: '2026-01', end_month: null },
      { user_id: ids.rep, group_dimension: 'team', group: 'North', start_month: '2026-01', end_month: '2026-02' },
      { user_id: ids.rep, group_dimension: 'team', group: 'South', start_month: '2026-03', end_month: null },
    ])
  })

  it('answers {import_id, objects_imported, count, data} and reads a missing start_date as an open start', async () => {
    const result = await imported('groups', [
      { user: 'rep@acme.example', group_dimension: 'team', group: 'North', end_date: '2026-02' },
      { user: 'rep@acme.example', group_dimension: 'team', group: 'South', start_date: '2026-03' },
    ])
    expect(result.error).toBe(false)
    expect(await groups()).toStrictEqual([
      { user_id: ids.rep, group_dimension: 'team', group: 'North', start_month: null, end_month: '2026-02' },
      { user_id: ids.rep, group_dimension: 'team', group: 'South', start_month: '2026-03', end_month: null },
    ])
    const overlapping = await imported('groups', [
      { user: 'owner@acme.example', group_dimension: 'team', group: 'North', end_date: '2026-02' },
      { user: 'owner@acme.example', group_dimension: 'team', group: 'South', start_date: '2026-02' },
    ])
    expect(overlapping.data_tables_details[0].error).toMatchObject({
      title: 'ValidationError',
      parsing_error_details: [{ line_number: 2 }],
    })
  })

  it('refuses two items that give a user two groups of one dimension in a month, and an unknown user', async () => {
    const conflicting = await imported('groups', [
      { user: 'rep@acme.example', group_dimension: 'team', group: 'North', start_date: '2026-01', end_date: '2026-03' },
      { user: 'rep@acme.example', group_dimension: 'region', group: 'EMEA', start_date: '2026-01' },
      { user: 'rep@acme.example', group_dimension: 'team', group: 'South', start_date: '2026-03' },
    ])
    expect(conflicting.data_tables_details[0].error).toMatchObject({
      title: 'ValidationError',
      parsing_error_details: [{ line_number: 3 }],
    })
    const unknown = await imported('groups', [
      { user: 'ghost@acme.example', group_dimension: 'team', group: 'North', start_date: '2026-01' },
    ])
    expect(unknown.data_tables_details[0].error.description).toContain('no user with email ghost@acme.example')
    expect(await groups()).toStrictEqual([])
  })

  it('runs managers, groups and users as separate imports even within a debounce window', async () => {
    const users = await h.call('/v1/users/bulk?debounce=60', { method: 'PUT', body: { data: [{ email: 'new@acme.example' }] } })
    const group = await h.call('/v1/users/groups/bulk', {
      method: 'PUT',
      body: { data: [{ user: 'rep@acme.example', group_dimension: 'team', group: 'North', start_date: '2026-01' }] },
    })
    const manager = await h.call('/v1/users/managers/bulk', {
      method: 'PUT',
      body: { data: [{ user: 'rep@acme.example', manager: 'owner@acme.example', start_date: '2026-01' }] },
    })
    expect(new Set([users.body.import_id, group.body.import_id, manager.body.import_id]).size).toBe(3)
  })
})
