import { describe, expect, it } from 'vitest'
import type { CompanyOrigin } from '../../../src/store/company-origins.ts'
import type { Store } from '../../../src/store/port.ts'
import { aCompany, anApiKey, aUser, minute } from '../builders.ts'
import { storePerTest, type StoreAdapter } from './support.ts'

/** An origin of `companyId` whose fixture's JSON text takes about `bytes`. */
function anOrigin(companyId: string, bytes = 100): CompanyOrigin {
  return {
    company_id: companyId,
    fixture: { company: { name: 'Acme' }, users: [{ email: 'ann@acme.example', note: 'x'.repeat(bytes) }] },
    loaded_at: minute(0),
    ids: [companyId, aCompany().id],
    api_keys: [anApiKey(companyId, aUser(companyId).id)],
  }
}

/**
 * What the test kit keeps in the store, for every adapter: the controlled clock's offset (one value for the whole
 * store, so the tests compare before and after, as the store may be shared) and the origin of each company.
 */
export function testKitContract(adapter: StoreAdapter): void {
  describe('test kit', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened), { isolated: true })

    describe('clockOffset', () => {
      it('advances by what it is given, every concurrent advance counted once', async () => {
        const before = await store.clockOffset.read()
        expect(before).toBeGreaterThanOrEqual(0)
        expect(await store.clockOffset.advance(1500)).toBe(before + 1500)
        await Promise.all(Array.from({ length: 10 }, () => store.clockOffset.advance(7)))
        expect(await store.clockOffset.read()).toBe(before + 1570)
        expect(await store.clockOffset.advance(0)).toBe(before + 1570)
      })

      it('is raised to a higher offset, never lowered', async () => {
        const before = await store.clockOffset.read()
        expect(await store.clockOffset.raiseTo(before + 60_000)).toBe(before + 60_000)
        expect(await store.clockOffset.raiseTo(before + 1_000)).toBe(before + 60_000)
        expect(await store.clockOffset.raiseTo(-5)).toBe(before + 60_000)
        expect(await store.clockOffset.read()).toBe(before + 60_000)
      })

      it('is shared with another store on the same data, as another process would see it', async () => {
        const twin = await adapter.openTwin(store)
        try {
          const moved = await store.clockOffset.advance(2000)
          expect(await twin.clockOffset.read()).toBe(moved)
          expect(await twin.clockOffset.advance(3000)).toBe(moved + 3000)
          expect(await store.clockOffset.read()).toBe(moved + 3000)
        } finally {
          if (twin !== store) await twin.close()
        }
      })
    })

    describe('companyOrigins', () => {
      it('keeps the origin of a company until it is replaced, or the company deleted', async () => {
        const [company, other] = [aCompany(), aCompany()]
        await store.companies.insert(company)
        await store.companies.insert(other)
        const origin = anOrigin(company.id)
        await store.companyOrigins.save(origin)
        await store.companyOrigins.save(anOrigin(other.id))
        expect(await store.companyOrigins.get(company.id)).toStrictEqual(origin)
        const replaced = { ...origin, loaded_at: minute(5), ids: [company.id] }
        await store.transaction((tx) => tx.companyOrigins.save(replaced))
        expect(await store.companyOrigins.get(company.id)).toStrictEqual(replaced)
        expect(await store.companyOrigins.get(aCompany().id)).toBeNull()
        expect(await store.companies.delete(company.id)).toBe(true)
        expect(await store.companyOrigins.get(company.id)).toBeNull()
        expect((await store.companyOrigins.get(other.id))?.company_id).toBe(other.id)
      })

      it('keeps an origin larger than a MongoDB document, and a small one that replaces it', async () => {
        const company = aCompany()
        await store.companies.insert(company)
        const large = anOrigin(company.id, 20 * 1024 * 1024)
        await store.companyOrigins.save(large)
        expect(JSON.stringify(await store.companyOrigins.get(company.id))).toBe(JSON.stringify(large))
        const small = anOrigin(company.id)
        await store.companyOrigins.save(small)
        expect(await store.companyOrigins.get(company.id)).toStrictEqual(small)
      })

      it('reads a large origin whole while it is being replaced: the one before or the one after, never parts of both', async () => {
        const company = aCompany()
        await store.companies.insert(company)
        const versions = [anOrigin(company.id, 20 * 1024 * 1024), { ...anOrigin(company.id, 20 * 1024 * 1024), loaded_at: minute(7) }]
        const texts = versions.map((version) => JSON.stringify(version))
        await store.companyOrigins.save(versions[0])
        const saves = Promise.all([store.companyOrigins.save(versions[1]), store.companyOrigins.save(versions[0])])
        const reads = await Promise.all([1, 2, 3].map(() => store.companyOrigins.get(company.id)))
        await saves
        for (const read of reads) expect(texts).toContain(JSON.stringify(read))
      })

      it('rolls a save back with the transaction around it', async () => {
        const company = aCompany()
        await expect(
          store.transaction(async (tx) => {
            await tx.companies.insert(company)
            await tx.companyOrigins.save(anOrigin(company.id))
            throw new Error('rolled back')
          }),
        ).rejects.toThrow('rolled back')
        expect(await store.companyOrigins.get(company.id)).toBeNull()
      })
    })
  })
}
