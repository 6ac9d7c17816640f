import { createApiKey } from '../src/auth/api-keys.ts'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { newId } from '../src/ids.ts'
import { type ImportHarness, startImportHarness } from './imports-support.ts'
import { anImport } from './store/builders.ts'

let h: ImportHarness
beforeEach(async () => {
  h = await startImportHarness()
  // The clock is at 2026-06: rep is managed by owner from 2026-01 to 2026-05.
  const reply = await h.call('/v1/users/managers/bulk', {
    method: 'PUT',
    body: { data: [{ user: 'rep@acme.example', manager: 'owner@acme.example', start_date: '2026-01', end_date: '2026-05' }] },
  })
  if (reply.status !== 200) throw new Error(`setting the manager failed: ${reply.text}`)
  await h.drain()
})
afterEach(async () => {
  await h.close()
})

const archive = (data: unknown) => h.call('/v1/users/archive/bulk', { method: 'DELETE', body: { data } })
/** The description of the refusal of an archive of the user `email`, whom the company does not have. */
const notFound = async (email: string) => {
  const reply = await archive([{ user: email }])
  expect(reply.status).toBe(400)
  return reply.body.errors[0].description as string
}

describe('DELETE /v1/users/archive/bulk', () => {
  it('archives at once and answers 200 {message}; the archived user can no longer authenticate', async () => {
    const repKey = await createApiKey(h.store, h.server.clock, h.companyId, (await h.user('rep@acme.example'))!.id)
    expect((await h.server.call('/v2/data-structures', { key: repKey })).status).toBe(200)
    const reply = await archive([{ user: 'REP@acme.example', end_date: '2026-07' }])
    expect(reply.status).toBe(200)
    expect(reply.body).toStrictEqual({ message: 'users archived successfully' })
    expect(await h.user('rep@acme.example')).toMatchObject({
      status: 'archived',
      archived_until: '2026-07',
      modified_at: '2026-06-01T00:00:00.000Z',
    })
    expect((await h.server.call('/v2/data-structures', { key: repKey })).status).toBe(401)
  })

  it('names a users import still in its debounce window when it would create the user to archive', async () => {
    const users = await h.call('/v1/users/bulk?debounce=300', { method: 'PUT', body: { data: [{ email: 'fresh@acme.example' }] } })
    expect(users.status).toBe(200)
    const early = await archive([{ user: 'Fresh@acme.example' }, { user: 'ghost@acme.example' }])
    expect(early.status).toBe(400)
    expect(early.body.errors).toStrictEqual([
      {
        error: 'NotFoundError',
        resource: 'user',
        description: `line 1: no user with email Fresh@acme.example (users import ${users.body.import_id}, which creates that user, is still scheduled: archive the user once it is applied)`,
      },
      { error: 'NotFoundError', resource: 'user', description: 'line 2: no user with email ghost@acme.example' },
    ])
    h.server.clock.advance(300_000)
    await h.drain()
    expect((await archive([{ user: 'fresh@acme.example' }])).status).toBe(200)
  })

  it('names a users import being applied, or waiting behind a hundred imports of other kinds, that creates the user to archive', async () => {
    const applied = await h.call('/v1/users/bulk', { method: 'PUT', body: { data: [{ email: 'applied@acme.example' }] } })
    const now = h.server.clock.now().toISOString()
    // A worker has claimed it and is applying it.
    expect((await h.store.imports.claimNext('another-worker', now, new Date(Date.parse(now) + 60_000).toISOString()))?.id).toBe(
      applied.body.import_id,
    )
    expect(await notFound('applied@acme.example')).toBe(
      `line 1: no user with email applied@acme.example (users import ${applied.body.import_id}, which creates that user, is being applied: archive the user once it is applied)`,
    )

    const waiting = await h.call('/v1/users/bulk?debounce=300', { method: 'PUT', body: { data: [{ email: 'waiting@acme.example' }] } })
    for (let index = 0; index < 100; index++) {
      const managers = { ...anImport(h.companyId, now, 0, 'managers'), target: 'managers' as const, data_table_key: 'managers' }
      const item = { user: 'rep@acme.example', manager: 'owner@acme.example', start_date: '2026-01' }
      await h.store.imports.enqueue(
        managers,
        {
          id: newId(),
          company_id: h.companyId,
          items: [item],
          options: { all: false, keep_overrides: false },
          received_at: now,
          bytes: 90,
        },
        now,
      )
    }
    expect(await notFound('waiting@acme.example')).toContain(
      `(users import ${waiting.body.import_id}, which creates that user, is still scheduled`,
    )
  })

  it('starts the archive period this month without end_date: a management that ended before is no conflict', async () => {
    expect((await archive([{ user: 'owner@acme.example' }])).status).toBe(200)
    expect((await h.user('owner@acme.example'))?.status).toBe('archived')
  })

  it('refuses the manager of someone in the archive period (the months after end_date) with 400 ConflictError', async () => {
    const reply = await archive([{ user: 'owner@acme.example', end_date: '2026-03' }])
    expect(reply.status).toBe(400)
    expect(reply.body).toStrictEqual({
      count: 1,
      errors: [
        { error: 'ConflictError', resource: 'user', description: expect.stringContaining('owner@acme.example manages rep@acme.example') },
      ],
    })
    expect((await h.user('owner@acme.example'))?.status).toBe('active')
    expect((await archive([{ user: 'owner@acme.example', end_date: '2026-05' }])).status).toBe(200)
  })

  it('archives with end_date 9999-12, the last month there is: the archive period is empty, so no management conflicts', async () => {
    const reply = await archive([{ user: 'owner@acme.example', end_date: '9999-12' }])
    expect(reply.status).toBe(200)
    expect(await h.user('owner@acme.example')).toMatchObject({ status: 'archived', archived_until: '9999-12' })
  })

  it('counts a management with an open start (sent without start_date) as a conflict', async () => {
    const reply = await h.call('/v1/users/managers/bulk', {
      method: 'PUT',
      body: { data: [{ user: 'owner@acme.example', manager: 'rep@acme.example' }] },
    })
    expect(reply.status).toBe(200)
    await h.drain()
    const refused = await archive([{ user: 'rep@acme.example' }])
    expect(refused.status).toBe(400)
    expect(refused.body.errors).toStrictEqual([
      {
        error: 'ConflictError',
        resource: 'user',
        description: expect.stringContaining('rep@acme.example manages owner@acme.example (the beginning to no end)'),
      },
    ])
  })

  it('does not count a managed person who is archived in the same call', async () => {
    expect(
      (
        await archive([
          { user: 'owner@acme.example', end_date: '2026-02' },
          { user: 'rep@acme.example', end_date: '2026-02' },
        ])
      ).status,
    ).toBe(200)
  })

  it('refuses the manager of someone archived, in the same call or before, whose last active month falls in the archive period', async () => {
    // rep, managed by owner up to 2026-05, stays active until 2026-04: owner cannot leave before.
    const together = await archive([
      { user: 'owner@acme.example', end_date: '2026-02' },
      { user: 'rep@acme.example', end_date: '2026-04' },
    ])
    expect(together.status).toBe(400)
    expect(together.body.errors).toStrictEqual([
      {
        error: 'ConflictError',
        resource: 'user',
        description: expect.stringContaining(
          'owner@acme.example manages rep@acme.example (2026-01 to 2026-05) in the archive period starting 2026-03',
        ),
      },
    ])
    expect((await h.user('rep@acme.example'))?.status).toBe('active')

    expect((await archive([{ user: 'rep@acme.example', end_date: '2026-04' }])).status).toBe(200)
    expect((await archive([{ user: 'owner@acme.example', end_date: '2026-02' }])).status).toBe(400)
    expect((await archive([{ user: 'owner@acme.example', end_date: '2026-04' }])).status).toBe(200)
  })

  it('refuses to archive someone again with a later last month that falls in the archive period of their archived manager', async () => {
    expect((await h.call('/v1/users/bulk', { method: 'PUT', body: { data: [{ email: 'mgr@acme.example' }] } })).status).toBe(200)
    await h.drain()
    const managers = { data: [{ user: 'rep@acme.example', manager: 'mgr@acme.example', start_date: '2026-01' }] }
    expect((await h.call('/v1/users/managers/bulk', { method: 'PUT', body: managers })).status).toBe(200)
    await h.drain()
    expect((await archive([{ user: 'rep@acme.example', end_date: '2026-03' }])).status).toBe(200)
    // rep left in March: mgr may leave after May.
    expect((await archive([{ user: 'mgr@acme.example', end_date: '2026-05' }])).status).toBe(200)
    const refused = await archive([{ user: 'rep@acme.example', end_date: '2026-09' }])
    expect(refused.status).toBe(400)
    expect(refused.body.errors).toStrictEqual([
      {
        error: 'ConflictError',
        resource: 'user',
        description:
          'rep@acme.example would be active up to 2026-09, managed by mgr@acme.example (2026-01 to no end), who is archived from 2026-06',
      },
    ])
    expect((await h.user('rep@acme.example'))?.archived_until).toBe('2026-03')
    expect((await archive([{ user: 'rep@acme.example', end_date: '2026-05' }])).status).toBe(200)
  })

  it('answers 400 (never a 404 with the list body) with NotFoundError on resource user for an unknown user, archiving nobody', async () => {
    const reply = await archive([{ user: 'rep@acme.example' }, { user: 'ghost@acme.example' }])
    expect(reply.status).toBe(400)
    expect(reply.body).toStrictEqual({
      count: 1,
      errors: [{ error: 'NotFoundError', resource: 'user', description: expect.stringContaining('ghost@acme.example') }],
    })
    expect((await h.user('rep@acme.example'))?.status).toBe('active')
  })

  it('answers 400 listing every problem of every family, archiving nobody', async () => {
    const reply = await archive([
      { user: 'rep@acme.example', end_date: '2026-13' },
      { user: 'not-an-email' },
      { user: 'ghost@acme.example' },
    ])
    expect(reply.status).toBe(400)
    expect(reply.body.count).toBe(3)
    expect(reply.body.errors).toStrictEqual([
      { error: 'ValidationError', resource: 'end_date', description: expect.stringContaining('line 1') },
      { error: 'ValidationError', resource: 'user', description: expect.stringContaining('line 2') },
      { error: 'NotFoundError', resource: 'user', description: expect.stringContaining('ghost@acme.example') },
    ])
    expect((await h.user('rep@acme.example'))?.status).toBe('active')
  })

  it('reports an unknown user on a line that has another problem too', async () => {
    const reply = await archive([{ user: 'nobody@acme.example', end_date: '2026-13' }])
    expect(reply.status).toBe(400)
    expect(reply.body.errors).toStrictEqual([
      { error: 'ValidationError', resource: 'end_date', description: expect.stringContaining('line 1') },
      { error: 'NotFoundError', resource: 'user', description: 'line 1: no user with email nobody@acme.example' },
    ])
  })

  it('answers 400 for a call mixing an unknown user and a manager conflict', async () => {
    const reply = await archive([{ user: 'owner@acme.example', end_date: '2026-03' }, { user: 'ghost@acme.example' }])
    expect(reply.status).toBe(400)
    expect(reply.body.errors.map((error: { error: string }) => error.error).toSorted()).toStrictEqual(['ConflictError', 'NotFoundError'])
  })

  it('refuses more than 50 users, or a malformed body, with 400 on resource data', async () => {
    const many = Array.from({ length: 51 }, (_, index) => ({ user: `u${index}@acme.example` }))
    for (const body of [{ data: many }, { data: [5] }, { users: [] }, [{ user: 'u0@acme.example' }], '{"data": [']) {
      const reply = await h.call('/v1/users/archive/bulk', {
        method: 'DELETE',
        body: typeof body === 'string' ? body : JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      })
      expect(reply.status).toBe(400)
      expect(reply.body.errors[0]).toMatchObject({ error: 'ValidationError', resource: 'data' })
    }
  })
})
