import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { newId } from '../../../src/ids.ts'
import type { ImportPayload } from '../../../src/store/model.ts'
import { ImportQueueFullError, type Store, StoreConflictError } from '../../../src/store/port.ts'
import { aCompany, aDataTable, anImport, aRecord, heavyItems, LARGEST_BODY_BYTES, minute } from '../builders.ts'
import { storePerTest, gate, type StoreAdapter } from './support.ts'

function aPayload(companyId: string, items: unknown[] = [{ email: 'a@example.com' }], bytes = 100): Omit<ImportPayload, 'import_id'> {
  return { id: newId(), company_id: companyId, items, options: { all: false, keep_overrides: false }, received_at: minute(0), bytes }
}

const ids = (imports: { id: string }[]) => imports.map((item) => item.id)

/** A year, in the minutes of `minute`: further ahead than any window or lease the service makes. */
const YEAR_IN_MINUTES = 365 * 24 * 60

/** The imports repository and the record operations of the import engine, for every adapter. */
export function importsContract(adapter: StoreAdapter): void {
  describe('imports', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened), { isolated: true })
    let companyId: string
    let otherCompanyId: string

    beforeEach(async () => {
      companyId = aCompany().id
      otherCompanyId = aCompany().id
    })

    /** Enqueues one payload at minute `at`, with a window of `window` minutes if it creates the import. */
    const enqueue = (at: number, window = 0, company = companyId, joinKey = 'users') =>
      store.imports.enqueue(anImport(company, minute(at), window, joinKey), aPayload(company), minute(at))

    /** Enqueues at minute `at` a call under request id `idKey`, itself `callKey`. */
    const sent = (at: number, idKey: string, callKey: string, { window = 0, company = companyId } = {}) =>
      store.imports.enqueue(
        anImport(company, minute(at), window),
        { ...aPayload(company), resend: { id_key: idKey, call_key: callKey } },
        minute(at),
      )

    /** Enqueues a payload of `bytes` at minute 0, bounded by `max` when given. */
    const enqueueBytes = (bytes: number, max?: number, company = companyId, joinKey = 'users') =>
      store.imports.enqueue(
        anImport(company, minute(0), 10, joinKey),
        aPayload(company, [{ email: 'a@example.com' }], bytes),
        minute(0),
        max,
      )

    /** An import of `company` created at minute 0, run and finished at minute `finishedAt`. */
    const finishedAt = async (company: string, finishedAtMinute: number) => {
      const created = await enqueue(0, 0, company, `users-${finishedAtMinute}`)
      expect((await store.imports.claimNext('w', minute(1), minute(60), company))?.id).toBe(created.id)
      await store.imports.finish(company, created.id, 'w', { finished_at: minute(finishedAtMinute), error: false, details: [] })
      return created.id
    }

    describe('enqueue', () => {
      it('creates an import, or joins the open one of the same company and join key while its window is open', async () => {
        const first = await enqueue(0, 10)
        // Nothing is applied yet: number_of_records is null until the import is finished.
        expect(first).toMatchObject({ status: 'scheduled', details: [{ number_of_records: null, error: null, ignored_keys: [] }] })
        expect((await enqueue(5, 10)).id).toBe(first.id)
        expect((await enqueue(9, 1)).id).toBe(first.id)
        // The window closes at minute 10 (exclusive), whatever the joining calls asked.
        expect((await enqueue(10, 10)).id).not.toBe(first.id)
        expect((await enqueue(6, 10, otherCompanyId)).id).not.toBe(first.id)
        expect((await enqueue(6, 10, companyId, 'managers')).id).not.toBe(first.id)

        const stored = await store.imports.get(companyId, first.id)
        expect(stored?.details).toHaveLength(3)
        const payloads = await store.imports.payloads(companyId, first.id)
        expect(payloads.map((payload) => payload.id)).toStrictEqual(stored?.details.map((detail) => detail.payload_id))
        expect(payloads.every((payload) => payload.import_id === first.id)).toBe(true)
        expect(await store.imports.get(otherCompanyId, first.id)).toBeNull()
        expect(await store.imports.payloads(otherCompanyId, first.id)).toStrictEqual([])
      })

      it('keeps the order calls were stored in, though ids made by another process sort before the earlier ones', async () => {
        // Two API instances: the second call's ids come from a process whose ObjectIds sort lower.
        const [high, low] = [newId(), newId()]
          .map((id) => id.slice(0, 8))
          .map((time, index) => `${time}${index === 0 ? 'f' : '0'}${'0'.repeat(15)}`)
        const first = await store.imports.enqueue(anImport(companyId, minute(0), 10), { ...aPayload(companyId), id: high }, minute(0))
        const joined = await store.imports.enqueue(
          { ...anImport(companyId, minute(1), 10), id: low },
          { ...aPayload(companyId), id: low },
          minute(1),
        )
        expect(joined.id).toBe(first.id)
        expect((await store.imports.payloads(companyId, first.id)).map((payload) => payload.id)).toStrictEqual([high, low])

        // A new import (another join key) made with a lower id still comes after the company's import waiting to run.
        const later = await store.imports.enqueue(
          { ...anImport(companyId, minute(2), 0, 'managers'), id: `${high.slice(0, 8)}0${'0'.repeat(15)}` },
          aPayload(companyId),
          minute(2),
        )
        expect(later.id > first.id).toBe(true)
        expect(await store.imports.get(companyId, later.id)).toMatchObject({ id: later.id, join_key: 'managers' })
        expect((await store.imports.claimNext('w1', minute(20), minute(25)))?.id).toBe(first.id)

        // The id made after another's is not the one that other's process makes next: that one stays free.
        const next = (BigInt(`0x${first.id}`) + 1n).toString(16).padStart(24, '0')
        const bumped = await store.imports.enqueue(
          { ...anImport(companyId, minute(3), 0, 'groups'), id: first.id.replace(/^(.{8})./, '$10') },
          aPayload(companyId),
          minute(3),
        )
        expect(bumped.id > later.id).toBe(true)
        const elsewhere = await store.imports.enqueue(
          { ...anImport(otherCompanyId, minute(3)), id: next },
          aPayload(otherCompanyId),
          minute(3),
        )
        expect(elsewhere.id).toBe(next)
      })

      it('stores the payload of the largest body the default limit allows, and reads it back whole', async () => {
        const items = heavyItems(LARGEST_BODY_BYTES)
        const joined = await store.imports.enqueue(anImport(companyId, minute(0)), aPayload(companyId, items), minute(0))
        const small = await store.imports.enqueue(anImport(companyId, minute(0), 10), aPayload(companyId), minute(0))
        expect(joined.details).toMatchObject([{ number_of_records: null, error: null }])
        const [stored] = await store.imports.payloads(companyId, joined.id)
        // Compared as text: a deep comparison of millions of numbers takes long.
        expect(JSON.stringify(stored.items)).toBe(JSON.stringify(items))
        expect(stored).toMatchObject({ id: joined.details[0].payload_id, import_id: joined.id, company_id: companyId })
        expect((await store.imports.payloads(companyId, small.id)).map((payload) => payload.items)).toStrictEqual([
          [{ email: 'a@example.com' }],
        ])
      })

      it("keeps each payload's own table and key, and a detail per call that names its key, across tables", async () => {
        const [deals, leads] = [aDataTable(companyId, { key: 'deals' }), aDataTable(companyId, { key: 'leads' })]
        const records = (at: number, table: { id: string; key: string }, items: unknown[]) =>
          store.imports.enqueue(
            { ...anImport(companyId, minute(at), 10, 'records'), target: 'records', data_table_key: 'records' },
            { ...aPayload(companyId, items), table_id: table.id, data_table_key: table.key },
            minute(at),
          )
        const first = await records(0, deals, [{ deal_id: 'a' }])
        expect((await records(1, leads, [{ lead_id: 'b' }, { lead_id: 'c' }])).id).toBe(first.id)
        expect((await records(2, deals, [])).id).toBe(first.id)
        const payloads = await store.imports.payloads(companyId, first.id)
        expect(payloads.map(({ table_id, data_table_key }) => ({ table_id, data_table_key }))).toStrictEqual([
          { table_id: deals.id, data_table_key: 'deals' },
          { table_id: leads.id, data_table_key: 'leads' },
          { table_id: deals.id, data_table_key: 'deals' },
        ])
        const stored = await store.imports.get(companyId, first.id)
        expect(stored?.details).toStrictEqual(
          payloads.map((payload) => ({
            payload_id: payload.id,
            data_table_key: payload.data_table_key,
            number_of_records: null,
            error: null,
            ignored_keys: [],
          })),
        )
      })

      it('stores a call sent again under its request id once: the import it joined is answered, within the hour', async () => {
        const first = await sent(0, 'id-1', 'A')
        expect(await store.imports.remembersRequest(companyId, 'id-1', minute(1))).toBe(true)
        expect(await store.imports.remembersRequest(companyId, 'id-9', minute(1))).toBe(false)
        expect(await store.imports.remembersRequest(otherCompanyId, 'id-1', minute(1))).toBe(false)
        // Its import finished meanwhile: still the same call, answered with its import as it is now.
        expect((await store.imports.claimNext('w', minute(1), minute(60), companyId))?.id).toBe(first.id)
        await store.imports.finish(companyId, first.id, 'w', { finished_at: minute(2), error: false, details: first.details })
        const again = await sent(59, 'id-1', 'A')
        expect(again).toMatchObject({ id: first.id, status: 'finished' })
        expect((await store.imports.list(companyId, { limit: 10 })).map((item) => item.id)).toStrictEqual([first.id])

        // Under another id, or of another company, or an hour and more later: calls of their own.
        expect((await sent(3, 'id-2', 'A')).id).not.toBe(first.id)
        expect((await sent(3, 'id-1', 'A', { company: otherCompanyId })).id).not.toBe(first.id)
        expect(await store.imports.remembersRequest(companyId, 'id-1', minute(61))).toBe(false)
        const later = await sent(61, 'id-1', 'A')
        expect(later.id).not.toBe(first.id)
        expect(await store.imports.payloads(companyId, later.id)).toHaveLength(1)
        // From then on, the id names the later call.
        expect((await sent(62, 'id-1', 'A')).id).toBe(later.id)
      })

      it('forgets the request ids received before a time, of every company, at most a batch at a time', async () => {
        await sent(0, 'id-1', 'A')
        await sent(0, 'id-2', 'B')
        await sent(1, 'id-1', 'A', { company: otherCompanyId })
        await sent(30, 'id-3', 'C')
        expect(await store.imports.remembersRequest(companyId, 'id-1', minute(30))).toBe(true)
        expect(await store.imports.remembersRequest(otherCompanyId, 'id-1', minute(30))).toBe(true)

        expect(await store.imports.forgetRequestIds(minute(10), 0)).toBe(0)
        expect(await store.imports.forgetRequestIds(minute(10), 2)).toBe(2)
        expect(await store.imports.forgetRequestIds(minute(10), 2)).toBe(1)
        expect(await store.imports.forgetRequestIds(minute(10), 2)).toBe(0)
        expect(await store.imports.remembersRequest(companyId, 'id-1', minute(30))).toBe(false)
        expect(await store.imports.remembersRequest(companyId, 'id-2', minute(30))).toBe(false)
        expect(await store.imports.remembersRequest(otherCompanyId, 'id-1', minute(30))).toBe(false)
        // Received at the time or after: kept, and still the call it names.
        expect(await store.imports.remembersRequest(companyId, 'id-3', minute(30))).toBe(true)
        expect(await store.imports.forgetRequestIds(minute(30), 10)).toBe(0)
        expect(await store.imports.remembersRequest(companyId, 'id-3', minute(31))).toBe(true)
      })

      it('remembers the latest call under each id only: what other ids send meanwhile changes nothing', async () => {
        // A, then B, then A again under one id: the last A is a call of its own, to be applied after B.
        const a = await sent(0, 'id', 'A')
        await sent(1, 'id', 'B')
        expect((await sent(2, 'id', 'A')).id).not.toBe(a.id)
        // Another client's calls in between, a new import or one joining the same window: still the same call.
        const x = await sent(10, 'id-x', 'X')
        await sent(11, 'other', 'Y')
        expect((await sent(12, 'id-x', 'X')).id).toBe(x.id)
        const windowed = await sent(20, 'id-w', 'W', { window: 10 })
        expect((await sent(21, 'other-w', 'Z', { window: 10 })).id).toBe(windowed.id)
        const windowedAgain = await sent(22, 'id-w', 'W', { window: 10 })
        expect(windowedAgain.id).toBe(windowed.id)
        expect(windowedAgain.details).toHaveLength(2)
        // Remembered at minute 40, the clock then moved back to minute 30: not the same call, stored again (in an
        // import of its own: the one made at 40 had no debounce, so no window to join).
        const c = await sent(40, 'id-c', 'C')
        // Remembered a minute ahead of the clock, as another instance's clock may be; not ten minutes ahead.
        expect(await store.imports.remembersRequest(companyId, 'id-c', minute(39))).toBe(true)
        expect(await store.imports.remembersRequest(companyId, 'id-c', minute(30))).toBe(false)
        const storedAgain = await sent(30, 'id-c', 'C')
        expect(storedAgain.id).not.toBe(c.id)
        expect(storedAgain.details).toHaveLength(1)
      })

      it('never joins an import made without a debounce, though the call read its clock before that import was made', async () => {
        // Two API instances: the call stored second read its clock first (it waited for the write lock, or its
        // clock is behind). Joined, its client would read the other call's refusal as its own.
        const first = await enqueue(5)
        expect((await enqueue(4)).id).not.toBe(first.id)
        expect((await enqueue(4, 10)).id).not.toBe(first.id)
        expect((await store.imports.get(companyId, first.id))?.details).toHaveLength(1)
      })

      it('never joins an import whose window ends further ahead than any the service makes (a clock ahead of this one made it)', async () => {
        // A controlled clock moved a year ahead made it; the store is now used on the system's clock.
        const ahead = await enqueue(YEAR_IN_MINUTES, 10)
        const late = await enqueue(0, 10)
        expect(late.id).not.toBe(ahead.id)
        expect((await enqueue(1, 10)).id).toBe(late.id)
        expect((await store.imports.get(companyId, ahead.id))?.details).toHaveLength(1)
      })

      it('never joins an import a worker has claimed', async () => {
        const first = await enqueue(0, 10)
        await store.imports.claimNext('w', minute(10), minute(20))
        const late = await enqueue(5, 10)
        expect(late.id).not.toBe(first.id)
      })
    })

    describe('the queue bound', () => {
      it("counts the bytes of the payloads of the company's imports until they are finished", async () => {
        expect(await store.imports.queuedBytes(companyId)).toBe(0)
        const users = await enqueueBytes(100)
        expect((await enqueueBytes(150)).payload_bytes).toBe(250)
        await enqueueBytes(400, undefined, companyId, 'records:t')
        await enqueueBytes(1000, undefined, otherCompanyId)
        expect((await store.imports.get(companyId, users.id))?.payload_bytes).toBe(250)
        expect(await store.imports.queuedBytes(companyId)).toBe(650)
        expect(await store.imports.queuedBytes(otherCompanyId)).toBe(1000)

        // A started import still counts: nothing of it is applied until it is finished.
        const claimed = await store.imports.claimNext('w', minute(10), minute(20))
        expect(claimed?.id).toBe(users.id)
        expect(await store.imports.queuedBytes(companyId)).toBe(650)
        await store.imports.finish(companyId, users.id, 'w', { finished_at: minute(11), error: false, details: [] })
        expect(await store.imports.queuedBytes(companyId)).toBe(400)
      })

      it('refuses a payload that would take the company over the bound, and stores nothing of it', async () => {
        const first = await enqueueBytes(600, 1000)
        await expect(enqueueBytes(500, 1000)).rejects.toSatisfy(
          (error) => error instanceof ImportQueueFullError && error.queuedBytes === 600,
        )
        await expect(enqueueBytes(500, 1000, companyId, 'records:t')).rejects.toBeInstanceOf(ImportQueueFullError)
        expect(await store.imports.queuedBytes(companyId)).toBe(600)
        expect((await store.imports.get(companyId, first.id))?.details).toHaveLength(1)
        expect(await store.imports.payloads(companyId, first.id)).toHaveLength(1)
        // Up to the bound exactly; another company has a bound of its own; unbounded, the store does not check.
        expect((await enqueueBytes(400, 1000)).id).toBe(first.id)
        await expect(enqueueBytes(1, 1000)).rejects.toBeInstanceOf(ImportQueueFullError)
        await enqueueBytes(1000, 1000, otherCompanyId)
        await enqueueBytes(5000)
        expect(await store.imports.queuedBytes(companyId)).toBe(6000)
      })

      it('accepts a payload of any size when nothing is queued', async () => {
        await enqueueBytes(5000, 1000)
        expect(await store.imports.queuedBytes(companyId)).toBe(5000)
        await expect(enqueueBytes(1, 1000)).rejects.toBeInstanceOf(ImportQueueFullError)
      })

      it('keeps the bound when many payloads come at once', async () => {
        const results = await Promise.allSettled(
          Array.from({ length: 30 }, (_, index) => enqueueBytes(100, 1000, companyId, index % 2 ? 'users' : 'records:t')),
        )
        expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(10)
        expect(
          results.filter((result) => result.status === 'rejected').every((result) => result.reason instanceof ImportQueueFullError),
        ).toBe(true)
        expect(await store.imports.queuedBytes(companyId)).toBe(1000)
      })
    })

    describe('claimNext', () => {
      it('claims the oldest import whose window is closed, stamping owner, lease, launch and attempt', async () => {
        const open = await enqueue(0, 30)
        const ready = await enqueue(1, 0, otherCompanyId)
        expect(await store.imports.claimNext('w1', minute(0), minute(5))).toBeNull()
        const claimed = await store.imports.claimNext('w1', minute(2), minute(7))
        expect(claimed).toMatchObject({
          id: ready.id,
          status: 'started',
          lease_owner: 'w1',
          lease_expires_at: minute(7),
          launched_at: minute(2),
          attempts: 1,
        })
        expect(await store.imports.get(otherCompanyId, ready.id)).toStrictEqual(claimed)
        expect((await store.imports.claimNext('w1', minute(30), minute(35)))?.id).toBe(open.id)
      })

      it('gives an import to one worker only, even when they ask at once', async () => {
        await enqueue(0)
        const claims = await Promise.all([
          store.imports.claimNext('a', minute(1), minute(2)),
          store.imports.claimNext('b', minute(1), minute(2)),
        ])
        expect(claims.filter((claim) => claim !== null)).toHaveLength(1)
      })

      it('runs one import per company at a time', async () => {
        const first = await enqueue(0)
        const second = await enqueue(1)
        const theirs = await enqueue(2, 0, otherCompanyId)
        expect((await store.imports.claimNext('a', minute(3), minute(13)))?.id).toBe(first.id)
        expect((await store.imports.claimNext('b', minute(3), minute(13)))?.id).toBe(theirs.id)
        expect(await store.imports.claimNext('b', minute(4), minute(14))).toBeNull()
        await store.imports.finish(companyId, first.id, 'a', { finished_at: minute(5), error: false, details: [] })
        expect((await store.imports.claimNext('b', minute(5), minute(15)))?.id).toBe(second.id)
      })

      it('claims the import of another company however many older ones wait behind a company’s running import', async () => {
        const running = await enqueue(0)
        for (let call = 0; call < 60; call++) await enqueue(0)
        const theirs = await enqueue(0, 0, otherCompanyId)
        expect((await store.imports.claimNext('a', minute(1), minute(11)))?.id).toBe(running.id)
        expect((await store.imports.claimNext('b', minute(1), minute(11)))?.id).toBe(theirs.id)
        expect(await store.imports.claimNext('c', minute(1), minute(11))).toBeNull()
      })

      it('takes companies in turn: a company not served lately first, then those served lately, the least recent first', async () => {
        const third = aCompany().id
        const ours = [await enqueue(0), await enqueue(1, 0, companyId, 'managers'), await enqueue(2, 0, companyId, 'groups')]
        const theirs = [await enqueue(3, 0, otherCompanyId), await enqueue(4, 0, otherCompanyId, 'managers')]
        const thirds = [await enqueue(5, 0, third)]
        // The companies served lately, the least recent first, as a worker keeps them.
        const recent: string[] = []
        const claimed: string[] = []
        for (;;) {
          const next = await store.imports.claimNext('w', minute(10), minute(20), undefined, recent)
          if (!next) break
          claimed.push(next.id)
          recent.splice(0, recent.length, ...recent.filter((company) => company !== next.company_id), next.company_id)
          await store.imports.finish(next.company_id, next.id, 'w', { finished_at: minute(10), error: false, details: [] })
        }
        expect(claimed).toStrictEqual([ours[0], theirs[0], thirds[0], ours[1], theirs[1], ours[2]].map((created) => created.id))
      })

      it('takes a company listed twice among those served lately at its later place, where it was served last', async () => {
        const third = aCompany().id
        await enqueue(0)
        const theirs = await enqueue(1, 0, otherCompanyId)
        await enqueue(2, 0, third)
        // Ours was served first and last: the other company, then the third, were served less recently.
        const recent = [companyId, otherCompanyId, third, companyId]
        expect((await store.imports.claimNext('w', minute(10), minute(20), undefined, recent))?.id).toBe(theirs.id)
      })

      it('claims the oldest first whatever the turns when asked for one company (a drain)', async () => {
        const first = await enqueue(0)
        await enqueue(1, 0, otherCompanyId)
        expect((await store.imports.claimNext('w', minute(10), minute(20), companyId, [otherCompanyId, companyId]))?.id).toBe(first.id)
      })

      it('takes a window or a lease further ahead than any the service makes (a clock ahead of this one made it) as closed or expired', async () => {
        const waiting = await enqueue(YEAR_IN_MINUTES, 10)
        expect((await store.imports.claimNext('w', minute(1), minute(11), companyId))?.id).toBe(waiting.id)
        const stuck = await enqueue(0, 0, otherCompanyId)
        await store.imports.claimNext('ahead', minute(YEAR_IN_MINUTES), minute(YEAR_IN_MINUTES + 10), otherCompanyId)
        const again = await store.imports.claimNext('w', minute(2), minute(12), otherCompanyId)
        expect(again).toMatchObject({ id: stuck.id, lease_owner: 'w', attempts: 2 })
      })

      it('does not take a company for busy while another of its imports holds a lease further ahead than any the service makes', async () => {
        const waiting = await enqueue(0, 30)
        const held = await enqueue(1, 0, companyId, 'managers')
        // A worker whose clock was a year ahead claimed the later import; the earlier one's window has closed since.
        expect((await store.imports.claimNext('ahead', minute(2), minute(YEAR_IN_MINUTES), companyId))?.id).toBe(held.id)
        expect((await store.imports.claimNext('w', minute(31), minute(41)))?.id).toBe(waiting.id)
      })

      it('claims again an import whose lease expired, keeping its first launch time and counting attempts', async () => {
        const queued = await enqueue(0)
        await store.imports.claimNext('dead', minute(1), minute(11))
        expect(await store.imports.claimNext('alive', minute(10), minute(20))).toBeNull()
        const again = await store.imports.claimNext('alive', minute(11), minute(21))
        expect(again).toMatchObject({ id: queued.id, lease_owner: 'alive', launched_at: minute(1), attempts: 2 })
      })
    })

    describe('renewLease, release and finish', () => {
      it('renews only for the owner, and the renewed lease holds', async () => {
        const queued = await enqueue(0)
        await store.imports.claimNext('w', minute(1), minute(11))
        expect(await store.imports.renewLease(companyId, queued.id, 'other', minute(30))).toBe(false)
        expect(await store.imports.renewLease(companyId, queued.id, 'w', minute(21))).toBe(true)
        expect(await store.imports.claimNext('x', minute(15), minute(25))).toBeNull()
        expect((await store.imports.get(companyId, queued.id))?.lease_expires_at).toBe(minute(21))
      })

      it('releases a claimed import back to scheduled, for its owner only', async () => {
        const queued = await enqueue(0)
        await store.imports.claimNext('w', minute(1), minute(11))
        expect(await store.imports.release(companyId, queued.id, 'other')).toBe(false)
        expect(await store.imports.release(companyId, queued.id, 'w')).toBe(true)
        expect(await store.imports.get(companyId, queued.id)).toMatchObject({
          status: 'scheduled',
          lease_owner: null,
          lease_expires_at: null,
        })
        expect((await store.imports.claimNext('x', minute(2), minute(12)))?.id).toBe(queued.id)
      })

      it('counts the releases of a run the store was too busy for, and those alone', async () => {
        const queued = await enqueue(0, 1)
        await store.imports.claimNext('w', minute(1), minute(11))
        expect(await store.imports.release(companyId, queued.id, 'w')).toBe(true)
        expect((await store.imports.get(companyId, queued.id))?.busy_postponements ?? 0).toBe(0)
        for (const owner of ['x', 'y']) {
          await store.imports.claimNext(owner, minute(2), minute(12))
          expect(await store.imports.release(companyId, queued.id, owner, { postponed: true })).toBe(true)
        }
        expect(await store.imports.get(companyId, queued.id)).toMatchObject({ status: 'scheduled', attempts: 3, busy_postponements: 2 })
        // A run that commits a part of the import makes progress: the busy runs before it no longer count.
        const claimed = (await store.imports.claimNext('z', minute(3), minute(13)))!
        expect(await store.imports.advance(companyId, queued.id, 'z', { payloads_applied: 1, details: claimed.details })).toBe(true)
        expect((await store.imports.get(companyId, queued.id))?.busy_postponements).toBeUndefined()
      })

      it('keeps what a run committed when its import is released: the next claim goes on from there', async () => {
        const queued = await enqueue(0, 1)
        expect((await enqueue(0)).id).toBe(queued.id)
        const claimed = (await store.imports.claimNext('w', minute(1), minute(11)))!
        expect(claimed.details).toHaveLength(2)
        const progress = {
          payloads_applied: 1,
          details: claimed.details.map((detail, index) => (index === 0 ? { ...detail, number_of_records: 1 } : detail)),
        }
        expect(await store.imports.advance(companyId, queued.id, 'w', progress)).toBe(true)
        expect(await store.imports.release(companyId, queued.id, 'w')).toBe(true)
        expect(await store.imports.get(companyId, queued.id)).toMatchObject({ status: 'scheduled', lease_owner: null, ...progress })
        expect(await store.imports.claimNext('x', minute(2), minute(12))).toMatchObject({
          id: queued.id,
          lease_owner: 'x',
          attempts: 2,
          ...progress,
        })
      })

      it('finishes once, for the worker that holds the import', async () => {
        const queued = await enqueue(0)
        await store.imports.claimNext('w', minute(1), minute(11))
        const error = {
          title: 'PartialFailure' as const,
          description: 'd',
          parsing_error_details: [{ line_number: 1, row: { a: 1 }, details: 'x' }],
        }
        const details = [
          { payload_id: queued.details[0].payload_id, data_table_key: 'users', number_of_records: 1, error, ignored_keys: ['b', 'c'] },
        ]
        const outcome = { finished_at: minute(2), error: true, details }
        const waiting = await enqueue(0, 0, otherCompanyId)
        expect(await store.imports.finish(companyId, queued.id, 'other', outcome)).toBe(false)
        expect(await store.imports.finish(otherCompanyId, queued.id, 'w', outcome)).toBe(false)
        expect(await store.imports.payloads(companyId, queued.id)).toHaveLength(1)
        expect(await store.imports.finish(companyId, queued.id, 'w', outcome)).toBe(true)
        // Its calls' bodies go with it; another import's stay.
        expect(await store.imports.payloads(companyId, queued.id)).toStrictEqual([])
        expect(await store.imports.payloads(otherCompanyId, waiting.id)).toHaveLength(1)
        expect(await store.imports.finish(companyId, queued.id, 'w', outcome)).toBe(false)
        expect(await store.imports.get(companyId, queued.id)).toStrictEqual({
          ...queued,
          status: 'finished',
          launched_at: minute(1),
          finished_at: minute(2),
          error: true,
          details,
          attempts: 1,
        })
        expect(await store.imports.claimNext('w', minute(60), minute(70), companyId)).toBeNull()
      })

      it('discards an import for the worker that holds it only, with its calls and their request ids, in the transaction around it', async () => {
        const queued = await sent(0, 'id-1', 'A')
        const kept = await sent(0, 'id-1', 'A', { company: otherCompanyId })
        await store.imports.claimNext('w', minute(1), minute(11), companyId)
        expect(await store.imports.discard(companyId, queued.id, 'other')).toBe(false)
        expect(await store.imports.discard(otherCompanyId, queued.id, 'w')).toBe(false)
        await expect(
          store.transaction(async (tx) => {
            expect(await tx.imports.discard(companyId, queued.id, 'w')).toBe(true)
            throw new Error('crash before commit')
          }),
        ).rejects.toThrow('crash before commit')
        expect((await store.imports.get(companyId, queued.id))?.status).toBe('started')
        const discarded = await store.transaction(
          async (tx) => (await tx.imports.hold(companyId, queued.id, 'w')) && tx.imports.discard(companyId, queued.id, 'w'),
          { company: companyId },
        )
        expect(discarded).toBe(true)
        expect(await store.imports.get(companyId, queued.id)).toBeNull()
        expect(await store.imports.payloads(companyId, queued.id)).toStrictEqual([])
        expect(await store.imports.remembersRequest(companyId, 'id-1', minute(1))).toBe(false)
        expect(await store.imports.discard(companyId, queued.id, 'w')).toBe(false)
        // Another company's import, and what it remembers, stay.
        expect(await store.imports.payloads(otherCompanyId, kept.id)).toHaveLength(1)
        expect(await store.imports.remembersRequest(otherCompanyId, 'id-1', minute(1))).toBe(true)
        // A finished import is not discarded: only a run that holds one discards it.
        const finished = await finishedAt(companyId, 5)
        expect(await store.imports.discard(companyId, finished, 'w')).toBe(false)
        expect((await store.imports.get(companyId, finished))?.status).toBe('finished')
      })

      it('holds an import for the worker that claimed it only, and leaves no trace of the hold', async () => {
        const queued = await enqueue(0)
        const claimed = (await store.imports.claimNext('w', minute(1), minute(11)))!
        expect(await store.imports.hold(companyId, queued.id, 'other')).toBe(false)
        expect(await store.imports.hold(otherCompanyId, queued.id, 'w')).toBe(false)
        const outcome = { finished_at: minute(2), error: false, details: claimed.details }
        const finished = await store.transaction(async (tx) => {
          expect(await tx.imports.hold(companyId, queued.id, 'w')).toBe(true)
          return tx.imports.finish(companyId, queued.id, 'w', outcome)
        })
        expect(finished).toBe(true)
        expect(await store.imports.get(companyId, queued.id)).toStrictEqual({
          ...claimed,
          ...outcome,
          status: 'finished',
          lease_owner: null,
          lease_expires_at: null,
        })
        expect(await store.imports.hold(companyId, queued.id, 'w')).toBe(false)
      })

      it('leaves no trace of a hold whose transaction hands the import back rather than advancing or finishing it', async () => {
        const queued = await enqueue(0)
        const claimed = (await store.imports.claimNext('w', minute(1), minute(11)))!
        const released = await store.transaction(async (tx) => {
          expect(await tx.imports.hold(companyId, queued.id, 'w')).toBe(true)
          return tx.imports.release(companyId, queued.id, 'w')
        })
        expect(released).toBe(true)
        expect(await store.imports.get(companyId, queued.id)).toStrictEqual({
          ...claimed,
          status: 'scheduled',
          lease_owner: null,
          lease_expires_at: null,
        })
      })

      it('lets a lease renewal made while the holding transaction is open wait for it, not make it start again', async () => {
        const queued = await enqueue(0)
        await store.imports.claimNext('w', minute(1), minute(11))
        const held = gate()
        const release = gate()
        let runs = 0
        const applying = store.transaction(
          async (tx) => {
            runs++
            if (!(await tx.imports.hold(companyId, queued.id, 'w'))) return false
            held.open()
            await release.promise
            return tx.imports.finish(companyId, queued.id, 'w', { finished_at: minute(5), error: false, details: [] })
          },
          { company: companyId },
        )
        await held.promise
        // What the worker's renewal timer does while the import is applied, from outside the transaction.
        const renewal = store.imports.renewLease(companyId, queued.id, 'w', minute(21))
        await Promise.race([renewal, sleep(300)])
        release.open()
        expect(await applying).toBe(true)
        expect(runs).toBe(1)
        // The renewal landed after the commit: the import is finished and no longer held.
        expect(await renewal).toBe(false)
        expect(await store.imports.get(companyId, queued.id)).toMatchObject({
          status: 'finished',
          lease_expires_at: null,
          finished_at: minute(5),
        })
      })

      it('records the progress of a run for the holder only, keeps it through a new claim, and drops it at finish', async () => {
        const queued = await enqueue(0)
        await store.imports.claimNext('w', minute(1), minute(11))
        const details = [{ payload_id: queued.details[0].payload_id, number_of_records: 1, error: null }]
        expect(await store.imports.advance(companyId, queued.id, 'other', { payloads_applied: 1, details })).toBe(false)
        const advanced = await store.transaction(async (tx) => {
          expect(await tx.imports.hold(companyId, queued.id, 'w')).toBe(true)
          return tx.imports.advance(companyId, queued.id, 'w', { payloads_applied: 1, details })
        })
        expect(advanced).toBe(true)
        const progressed = await store.imports.get(companyId, queued.id)
        expect(progressed).toStrictEqual({
          ...queued,
          status: 'started',
          lease_owner: 'w',
          lease_expires_at: minute(11),
          launched_at: minute(1),
          attempts: 1,
          details,
          payloads_applied: 1,
        })
        const again = await store.imports.claimNext('x', minute(11), minute(21))
        expect(again).toStrictEqual({ ...progressed, lease_owner: 'x', lease_expires_at: minute(21), attempts: 2 })
        const outcome = { finished_at: minute(12), error: false, details }
        expect(await store.imports.finish(companyId, queued.id, 'x', outcome)).toBe(true)
        expect(await store.imports.get(companyId, queued.id)).toStrictEqual({
          ...queued,
          ...outcome,
          status: 'finished',
          launched_at: minute(1),
          attempts: 2,
        })
      })

      it('rolls a finish back with the transaction around it', async () => {
        const queued = await enqueue(0)
        await store.imports.claimNext('w', minute(1), minute(11))
        await expect(
          store.transaction(async (tx) => {
            await tx.imports.finish(companyId, queued.id, 'w', { finished_at: minute(2), error: false, details: [] })
            throw new Error('crash before commit')
          }),
        ).rejects.toThrow('crash before commit')
        expect((await store.imports.get(companyId, queued.id))?.status).toBe('started')
      })
    })

    describe('list, closeWindows and the claim of one company (the admin drain)', () => {
      it("lists the company's imports newest first, by status when asked, at most `limit`", async () => {
        const first = await enqueue(0)
        const second = await enqueue(1, 0, companyId, 'managers')
        const third = await store.imports.enqueue(
          { ...anImport(companyId, minute(2), 10, 'groups'), target: 'groups', data_table_key: 'groups' },
          aPayload(companyId),
          minute(2),
        )
        await enqueue(0, 0, otherCompanyId)
        await store.imports.claimNext('w', minute(1), minute(11), companyId)
        expect(ids(await store.imports.list(companyId, { limit: 10 }))).toStrictEqual([third.id, second.id, first.id])
        expect(ids(await store.imports.list(companyId, { limit: 2 }))).toStrictEqual([third.id, second.id])
        expect(ids(await store.imports.list(companyId, { status: 'scheduled', limit: 10 }))).toStrictEqual([third.id, second.id])
        expect(ids(await store.imports.list(companyId, { target: 'groups', limit: 10 }))).toStrictEqual([third.id])
        expect(ids(await store.imports.list(companyId, { status: 'scheduled', target: 'users', limit: 10 }))).toStrictEqual([second.id])
        expect(await store.imports.list(companyId, { status: 'started', target: 'groups', limit: 10 })).toStrictEqual([])
        expect(ids(await store.imports.list(companyId, { status: 'started', target: 'users', limit: 10 }))).toStrictEqual([first.id])
        expect(await store.imports.list(companyId, { status: 'started', limit: 10 })).toStrictEqual([
          await store.imports.get(companyId, first.id),
        ])
        expect(await store.imports.list(companyId, { status: 'finished', limit: 10 })).toStrictEqual([])
        // Several statuses at once: what a drain reads, so that an import moving between them is not missed.
        expect(ids(await store.imports.list(companyId, { status: ['scheduled', 'started'], limit: 10 }))).toStrictEqual([
          third.id,
          second.id,
          first.id,
        ])
        expect(ids(await store.imports.list(companyId, { status: ['started', 'finished'], target: 'users', limit: 10 }))).toStrictEqual([
          first.id,
        ])
        expect(await store.imports.list(companyId, { limit: 0 })).toStrictEqual([])
        expect(ids(await store.imports.list(aCompany().id, { limit: 10 }))).toStrictEqual([])
      })

      it("closes the company's open windows at `now`: no call joins them any more, and they are runnable", async () => {
        const open = await enqueue(0, 10)
        const closedAlready = await enqueue(0, 1, companyId, 'managers')
        const otherOpen = await enqueue(0, 10, otherCompanyId)
        expect(await store.imports.claimNext('w', minute(2), minute(12), companyId)).toMatchObject({ id: closedAlready.id })
        const stored = await store.imports.get(companyId, open.id)
        expect(await store.imports.closeWindows(companyId, minute(3))).toBe(1)
        expect(await store.imports.get(companyId, open.id)).toStrictEqual({ ...stored, window_ends_at: minute(3) })
        // The other company's window stays open; the started import keeps its own.
        expect((await store.imports.get(otherCompanyId, otherOpen.id))?.window_ends_at).toBe(minute(10))
        expect((await store.imports.get(companyId, closedAlready.id))?.window_ends_at).toBe(minute(1))
        // A call at the same instant starts a new import: the window is closed at `now` (exclusive).
        expect((await enqueue(3, 10)).id).not.toBe(open.id)
        expect(await store.imports.closeWindows(companyId, minute(3))).toBe(1)
        expect(await store.imports.closeWindows(companyId, minute(3))).toBe(0)
      })

      it('claims only an import of the company it is asked for', async () => {
        const other = await enqueue(0, 0, otherCompanyId)
        const own = await enqueue(1)
        expect(await store.imports.claimNext('w', minute(2), minute(12), companyId)).toMatchObject({ id: own.id, status: 'started' })
        expect(await store.imports.claimNext('w', minute(2), minute(12), companyId)).toBeNull()
        expect((await store.imports.get(otherCompanyId, other.id))?.status).toBe('scheduled')
        expect(await store.imports.claimNext('w', minute(2), minute(12), otherCompanyId)).toMatchObject({ id: other.id })
      })
    })

    describe('purgeFinished (the retention of finished imports)', () => {
      it('deletes finished imports of every company finished before the time given, at most `limit` at once, never an unfinished one', async () => {
        const early = await finishedAt(companyId, 5)
        const late = await finishedAt(companyId, 20)
        const elsewhere = await finishedAt(otherCompanyId, 6)
        const started = await enqueue(0, 0, otherCompanyId, 'managers')
        expect((await store.imports.claimNext('w', minute(1), minute(60), otherCompanyId))?.id).toBe(started.id)
        const scheduled = await enqueue(0, 30)

        expect(await store.imports.purgeFinished(minute(10), 1)).toBe(1)
        expect(await store.imports.purgeFinished(minute(10), 10)).toBe(1)
        expect(await store.imports.purgeFinished(minute(10), 10)).toBe(0)
        expect(await store.imports.get(companyId, early)).toBeNull()
        expect(await store.imports.get(otherCompanyId, elsewhere)).toBeNull()
        expect((await store.imports.get(companyId, late))?.status).toBe('finished')
        expect((await store.imports.get(otherCompanyId, started.id))?.status).toBe('started')
        expect((await store.imports.get(companyId, scheduled.id))?.status).toBe('scheduled')
        // Before its time exactly: an import finished at the time given stays.
        expect(await store.imports.purgeFinished(minute(20), 10)).toBe(0)
        expect(await store.imports.purgeFinished(minute(21), 10)).toBe(1)
        expect(await store.imports.purgeFinished(minute(99), 0)).toBe(0)
      })
    })

    describe('records, for imports', () => {
      it('saves records as given: replaces by id, inserts new ones, refuses an external id another record holds', async () => {
        const table = aDataTable(companyId)
        await store.dataTables.insert(table)
        const kept = aRecord(companyId, table.id)
        await store.records.saveMany(companyId, [kept])
        const changed = { ...kept, values: { deal_id: kept.external_id, deal_name: 'changed' }, modified_at: minute(9) }
        const added = aRecord(companyId, table.id)
        await store.records.saveMany(companyId, [changed, added])
        expect(await store.records.list(companyId, table.id, { offset: 0, limit: 10 })).toStrictEqual(
          [changed, added].toSorted((a, b) => a.id.localeCompare(b.id)),
        )
        const clash = aRecord(companyId, table.id, { external_id: kept.external_id })
        await expect(store.records.saveMany(companyId, [aRecord(companyId, table.id), clash])).rejects.toBeInstanceOf(StoreConflictError)
        expect(await store.records.count(companyId, table.id)).toBe(2)
      })

      it('finds, deletes by external id and deletes all the records of one table', async () => {
        const table = aDataTable(companyId)
        const other = aDataTable(companyId)
        await store.dataTables.insert(table)
        await store.dataTables.insert(other)
        const [plain, overridden] = [aRecord(companyId, table.id), aRecord(companyId, table.id, { overrides: { deal_name: 'hand' } })]
        const elsewhere = aRecord(companyId, other.id, { external_id: plain.external_id })
        await store.records.upsert(companyId, [plain, overridden, elsewhere])

        const found = await store.records.findByExternalIds(companyId, table.id, [plain.external_id, 'nope', plain.external_id])
        expect([...found.entries()]).toStrictEqual([[plain.external_id, plain]])
        expect(await store.records.findByExternalIds(otherCompanyId, table.id, [plain.external_id])).toStrictEqual(new Map())

        expect(await store.records.deleteByExternalIds(otherCompanyId, table.id, [plain.external_id])).toBe(0)
        expect(await store.records.deleteByExternalIds(companyId, table.id, [plain.external_id, 'nope'])).toBe(1)
        expect(await store.records.count(companyId, table.id)).toBe(1)
        expect(await store.records.count(companyId, other.id)).toBe(1)
        expect(await store.records.deleteAll(companyId, table.id)).toBe(1)
        expect(await store.records.count(companyId, table.id)).toBe(0)
        expect(await store.records.count(companyId, other.id)).toBe(1)
      })

      it('deletes the records of a table that carry no manual override, a batch at a time', async () => {
        const [table, other] = [aDataTable(companyId), aDataTable(companyId)]
        await store.dataTables.insert(table)
        await store.dataTables.insert(other)
        const overridden = aRecord(companyId, table.id, { overrides: { deal_name: 'hand' } })
        const plain = Array.from({ length: 5 }, () => aRecord(companyId, table.id))
        const elsewhere = aRecord(companyId, other.id)
        await store.records.upsert(companyId, [...plain, overridden, elsewhere])
        expect(await store.records.deleteUnoverridden(otherCompanyId, table.id, 10)).toBe(0)
        // A batch of none deletes none (to MongoDB, a limit of 0 is no limit).
        expect(await store.records.deleteUnoverridden(companyId, table.id, 0)).toBe(0)
        expect(await store.records.count(companyId, table.id)).toBe(6)
        expect(await store.records.deleteUnoverridden(companyId, table.id, 2)).toBe(2)
        expect(await store.records.deleteUnoverridden(companyId, table.id, 2)).toBe(2)
        expect(await store.records.deleteUnoverridden(companyId, table.id, 2)).toBe(1)
        expect(await store.records.deleteUnoverridden(companyId, table.id, 2)).toBe(0)
        expect(await store.records.list(companyId, table.id, { offset: 0, limit: 10 })).toStrictEqual([overridden])
        expect(await store.records.list(companyId, other.id, { offset: 0, limit: 10 })).toStrictEqual([elsewhere])
      })
    })
  })
}

/** The queue bound seen by two stores on the same data, as two API instances would see it. */
export function sharedImportQueueContract(adapter: StoreAdapter): void {
  describe('the import queue bound shared between stores', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened), { isolated: true })
    let twin: Store

    beforeEach(async () => {
      twin = await adapter.openTwin(store)
    })

    afterEach(async () => {
      await twin.close()
    })

    it('counts the queue in the store, so that two instances together stay within the bound', async () => {
      const companyId = aCompany().id
      const results = await Promise.allSettled(
        Array.from({ length: 30 }, (_, index) =>
          (index % 2 === 0 ? store : twin).imports.enqueue(
            anImport(companyId, minute(0), 10, index % 3 === 0 ? 'users' : 'records:t'),
            aPayload(companyId, [{ email: 'a@example.com' }], 100),
            minute(0),
            1000,
          ),
        ),
      )
      expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(10)
      expect(
        results.filter((result) => result.status === 'rejected').every((result) => result.reason instanceof ImportQueueFullError),
      ).toBe(true)
      expect(await store.imports.queuedBytes(companyId)).toBe(1000)
      expect(await twin.imports.queuedBytes(companyId)).toBe(1000)
    })
  })
}
