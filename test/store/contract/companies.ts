import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../../src/clock.ts'
import { newId } from '../../../src/ids.ts'
import { enqueueImport } from '../../../src/imports/enqueue.ts'
import type { Store } from '../../../src/store/port.ts'
import { aCompany, aRecord, aUser, byId } from '../builders.ts'
import { storePerTest, type StoreAdapter } from './support.ts'
import { populateTwo, readAll, readsOf, nothingOf } from './world.ts'

/** A pause as a paced deletion takes: one turn of the event loop. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

export function companiesContract(adapter: StoreAdapter): void {
  describe('companies', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

    it('lists companies in id order', async () => {
      const companies = [aCompany(), aCompany(), aCompany()]
      for (const company of companies.toReversed()) await store.companies.insert(company)
      const mine = new Set(companies.map((company) => company.id))
      const listed = (await store.companies.list()).filter((company) => mine.has(company.id))
      expect(listed).toStrictEqual(byId(companies))
    })

    it('deletes a company with everything it holds, and nothing of another company', async () => {
      const [doomed, kept] = await populateTwo(store)
      expect(await store.companies.delete(doomed.company.id)).toBe(true)

      expect(await store.companies.get(doomed.company.id)).toBeNull()
      expect((await store.companies.list()).map((company) => company.id)).not.toContain(doomed.company.id)
      expect(await store.apiKeys.findByHash(doomed.apiKey.hash)).toBeNull()
      expect(await readAll(store, doomed.company.id, doomed)).toStrictEqual(nothingOf())

      expect(await store.companies.get(kept.company.id)).toStrictEqual(kept.company)
      expect(await store.apiKeys.findByHash(kept.apiKey.hash)).toStrictEqual(kept.apiKey)
      expect(await readAll(store, kept.company.id, kept)).toStrictEqual(readsOf(kept))
    })

    it("deletes a company's imports with the payloads of their calls, and no other company's", async () => {
      const [doomed, kept] = await populateTwo(store)
      const clock = new ManualClock('2026-06-01T10:00:00.000Z')
      const enqueue = (company: typeof doomed.company) =>
        enqueueImport(store, clock, { company, target: 'users', items: [{ email: 'a@b.example' }], bytes: 30, queueLimitBytes: 1024 })
      const [doomedImport, keptImport] = [await enqueue(doomed.company), await enqueue(kept.company)]
      expect(await store.imports.payloads(doomed.company.id, doomedImport.import_id)).toHaveLength(1)

      expect(await store.companies.delete(doomed.company.id)).toBe(true)
      expect(await store.imports.get(doomed.company.id, doomedImport.import_id)).toBeNull()
      expect(await store.imports.payloads(doomed.company.id, doomedImport.import_id)).toStrictEqual([])
      expect(await store.imports.queuedBytes(doomed.company.id)).toBe(0)
      expect(await store.imports.payloads(kept.company.id, keptImport.import_id)).toHaveLength(1)
    })

    it('deletes a company inside a transaction when told to pause, and keeps it all when the transaction fails', async () => {
      const [doomed, kept] = await populateTwo(store)
      await expect(
        store.transaction(async (tx) => {
          expect(await tx.companies.delete(doomed.company.id, { pause: turn })).toBe(true)
          throw new Error('the work after the deletion failed')
        }),
      ).rejects.toThrow('the work after the deletion failed')
      expect(await store.companies.get(doomed.company.id)).toStrictEqual(doomed.company)
      expect(await readAll(store, doomed.company.id, doomed)).toStrictEqual(readsOf(doomed))

      await store.transaction(async (tx) => {
        expect(await tx.companies.delete(doomed.company.id, { pause: turn })).toBe(true)
      })
      expect(await store.companies.get(doomed.company.id)).toBeNull()
      expect(await store.apiKeys.findByHash(doomed.apiKey.hash)).toBeNull()
      expect(await readAll(store, doomed.company.id, doomed)).toStrictEqual(nothingOf())
      expect(await readAll(store, kept.company.id, kept)).toStrictEqual(readsOf(kept))
    })

    it('deletes a large company in steps that let other calls through, its company and keys gone from the first', async () => {
      const [doomed, kept] = await populateTwo(store)
      // Far more rows than a step of the deletion takes (SQLite: SWEEP_SLICE_ROWS).
      const records = Array.from({ length: 12_000 }, () => aRecord(doomed.company.id, doomed.table.id))
      await store.records.upsert(doomed.company.id, records)
      let finished = false
      const deletion = store.companies.delete(doomed.company.id).finally(() => (finished = true))
      while (await store.companies.get(doomed.company.id)) await turn()
      expect(await store.apiKeys.findByHash(doomed.apiKey.hash)).toBeNull()
      // A write sent once the company is gone is not held until its rows are.
      const newcomer = aUser(kept.company.id)
      await store.users.save(kept.company.id, [newcomer])
      expect(finished).toBe(false)
      // Deleted again meanwhile, it is unknown, and answered once nothing of it is left (a deletion sent again after a
      // failure is finished so).
      expect(await store.companies.delete(doomed.company.id)).toBe(false)
      expect(await store.records.count(doomed.company.id, doomed.table.id)).toBe(0)
      expect(await readAll(store, doomed.company.id, doomed)).toStrictEqual(nothingOf())
      expect(await deletion).toBe(true)
      expect(await store.companies.unfinishedDeletions()).not.toContain(doomed.company.id)
      expect(await store.users.get(kept.company.id, newcomer.id)).toStrictEqual(newcomer)
      expect(await store.apiKeys.findByHash(kept.apiKey.hash)).toStrictEqual(kept.apiKey)
    })

    it('marks a deletion cut short, its company and keys gone, until deleting it again finishes it', async () => {
      const [doomed, kept] = await populateTwo(store)
      const records = Array.from({ length: 12_000 }, () => aRecord(doomed.company.id, doomed.table.id))
      await store.records.upsert(doomed.company.id, records)
      // What a crash or a failure midway leaves, as a stopping worker's signal cuts it (SQLite: after a slice of
      // SWEEP_SLICE_ROWS; MongoDB: before the first collection).
      const stopped = new AbortController()
      stopped.abort(new Error('the worker stops'))
      await expect(store.companies.delete(doomed.company.id, { signal: stopped.signal })).rejects.toThrow('the worker stops')
      expect(await store.companies.get(doomed.company.id)).toBeNull()
      expect(await store.apiKeys.findByHash(doomed.apiKey.hash)).toBeNull()
      expect(await store.records.count(doomed.company.id, doomed.table.id)).toBeGreaterThan(0)
      const unfinished = await store.companies.unfinishedDeletions()
      expect(unfinished).toContain(doomed.company.id)
      expect(unfinished).not.toContain(kept.company.id)
      expect(unfinished).toStrictEqual(unfinished.toSorted())

      // Another company's deletion, whole or inside a transaction, leaves the mark as it is, and makes none.
      const [other] = await populateTwo(store)
      expect(await store.companies.delete(other.company.id)).toBe(true)
      await store.transaction((tx) => tx.companies.delete(kept.company.id))
      expect(await store.companies.unfinishedDeletions()).toStrictEqual(unfinished)

      expect(await store.companies.delete(doomed.company.id)).toBe(false)
      expect(await store.companies.unfinishedDeletions()).not.toContain(doomed.company.id)
      expect(await readAll(store, doomed.company.id, doomed)).toStrictEqual(nothingOf())
    })

    it('answers false when deleting an unknown company', async () => {
      expect(await store.companies.delete(newId())).toBe(false)
    })

    it('removes what an interrupted deletion left of a company when it is deleted again', async () => {
      const [doomed, kept] = await populateTwo(store)
      expect(await store.companies.delete(doomed.company.id)).toBe(true)
      // What a deletion stopped after the company itself went would have left behind.
      await store.users.save(doomed.company.id, doomed.users)
      await store.statements.insertMany(doomed.statements)
      expect(await store.companies.delete(doomed.company.id)).toBe(false)
      expect(await readAll(store, doomed.company.id, doomed)).toStrictEqual(nothingOf())
      expect(await readAll(store, kept.company.id, kept)).toStrictEqual(readsOf(kept))
    })

    it('lets a deleted company be written again from scratch', async () => {
      const [world] = await populateTwo(store)
      await store.companies.delete(world.company.id)
      await store.companies.insert(world.company)
      await store.users.save(world.company.id, world.users)
      await store.quotaValues.insertMany([world.value])
      expect(await store.users.count(world.company.id)).toBe(2)
      expect(await store.quotaValues.count(world.company.id, world.quota.id)).toBe(1)
    })
  })
}
