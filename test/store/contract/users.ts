import { describe, expect, it } from 'vitest'
import { newId } from '../../../src/ids.ts'
import type { User } from '../../../src/store/model.ts'
import type { Store } from '../../../src/store/port.ts'
import { aCompany, aUser, byId } from '../builders.ts'
import { storePerTest, expectConflict, ALL, type StoreAdapter } from './support.ts'
import { aStoredCompany } from './world.ts'

export function usersContract(adapter: StoreAdapter): void {
  describe('users', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

    it('lists users in id order with offset windows, and counts them', async () => {
      const companyId = await aStoredCompany(store)
      const users = Array.from({ length: 5 }, () => aUser(companyId))
      await store.users.save(companyId, users.toReversed())
      const sorted = byId(users)
      expect(await store.users.list(companyId, ALL)).toStrictEqual(sorted)
      expect(await store.users.list(companyId, { offset: 0, limit: 2 })).toStrictEqual(sorted.slice(0, 2))
      expect(await store.users.list(companyId, { offset: 2, limit: 2 })).toStrictEqual(sorted.slice(2, 4))
      expect(await store.users.list(companyId, { offset: 4, limit: 2 })).toStrictEqual(sorted.slice(4))
      expect(await store.users.list(companyId, { offset: 5, limit: 2 })).toStrictEqual([])
      expect(await store.users.count(companyId)).toBe(5)
      // With the id of the row before the window, the rows after it, whatever the offset; never another company's.
      const stranger = await aStoredCompany(store)
      await store.users.save(stranger, [aUser(stranger)])
      expect(await store.users.list(companyId, { offset: 0, limit: 2, afterId: sorted[2].id })).toStrictEqual(sorted.slice(3))
      expect(await store.users.list(companyId, { offset: 9, limit: 9, afterId: sorted[4].id })).toStrictEqual([])
      // The greatest id, the company's own.
      expect(await store.users.lastId(companyId)).toBe(sorted[4].id)
      expect(await store.users.lastId(aCompany().id)).toBeNull()
    })

    it('replaces a saved user by id', async () => {
      const companyId = await aStoredCompany(store)
      const user = aUser(companyId, { email: 'old@example.com' })
      await store.users.save(companyId, [user])
      const changed: User = { ...user, email: 'New@Example.com', name: 'Renamed', status: 'archived', attributes: { x: 1 } }
      await store.users.save(companyId, [changed])
      expect(await store.users.get(companyId, user.id)).toStrictEqual(changed)
      expect(await store.users.count(companyId)).toBe(1)
      expect(await store.users.findByEmails(companyId, ['old@example.com'])).toStrictEqual(new Map())
      expect(await store.users.findByEmails(companyId, ['new@example.com'])).toStrictEqual(new Map([['new@example.com', changed]]))
    })

    it('frees the old email of a user whose email changed', async () => {
      const companyId = await aStoredCompany(store)
      const user = aUser(companyId, { email: 'ann@example.com' })
      await store.users.save(companyId, [user])
      await store.users.save(companyId, [{ ...user, email: 'ann.smith@example.com' }])
      const newcomer = aUser(companyId, { email: 'ANN@example.com' })
      await store.users.save(companyId, [newcomer])
      expect(await store.users.findByEmails(companyId, ['ann@example.com'])).toStrictEqual(new Map([['ann@example.com', newcomer]]))
    })

    it('lets a user change only the case of their own email', async () => {
      const companyId = await aStoredCompany(store)
      const user = aUser(companyId, { email: 'ann@example.com' })
      await store.users.save(companyId, [user])
      await store.users.save(companyId, [{ ...user, email: 'Ann@Example.com' }])
      expect(await store.users.get(companyId, user.id)).toMatchObject({ email: 'Ann@Example.com' })
    })

    it('gets the users that exist among many ids, by id', async () => {
      const companyId = await aStoredCompany(store)
      const [ann, bob, eve] = [aUser(companyId), aUser(companyId), aUser(companyId)]
      await store.users.save(companyId, [ann, bob, eve])
      const found = await store.users.getMany(companyId, [eve.id, newId(), ann.id, ann.id])
      expect(found).toStrictEqual(
        new Map([
          [eve.id, eve],
          [ann.id, ann],
        ]),
      )
    })

    it('finds users by email case-insensitively, keyed by lower-case email', async () => {
      const companyId = await aStoredCompany(store)
      const ann = aUser(companyId, { email: 'Ann.Smith@Example.com' })
      const bob = aUser(companyId, { email: 'bob@example.com' })
      await store.users.save(companyId, [ann, bob])
      const found = await store.users.findByEmails(companyId, [
        'ANN.SMITH@EXAMPLE.COM',
        'Bob@Example.Com',
        'nobody@example.com',
        'bob@example.com',
      ])
      expect(found).toStrictEqual(
        new Map([
          ['ann.smith@example.com', ann],
          ['bob@example.com', bob],
        ]),
      )
    })

    it('refuses an email already used in the company, whatever its case, and saves none of the batch', async () => {
      const companyId = await aStoredCompany(store)
      const ann = aUser(companyId, { email: 'ann@example.com' })
      await store.users.save(companyId, [ann])
      const fresh = aUser(companyId)
      await expectConflict(store.users.save(companyId, [fresh, aUser(companyId, { email: 'ANN@Example.COM' })]))
      expect(await store.users.get(companyId, fresh.id)).toBeNull()
      expect(await store.users.list(companyId, ALL)).toStrictEqual([ann])
    })

    it('refuses a batch that holds the same email twice', async () => {
      const companyId = await aStoredCompany(store)
      await expectConflict(
        store.users.save(companyId, [aUser(companyId, { email: 'eve@example.com' }), aUser(companyId, { email: 'Eve@example.com' })]),
      )
      expect(await store.users.count(companyId)).toBe(0)
    })

    it('refuses changing an email to one another user of the company has', async () => {
      const companyId = await aStoredCompany(store)
      const [ann, bob] = [aUser(companyId, { email: 'ann@example.com' }), aUser(companyId, { email: 'bob@example.com' })]
      await store.users.save(companyId, [ann, bob])
      await expectConflict(store.users.save(companyId, [{ ...bob, email: 'Ann@example.com' }]))
      expect(await store.users.get(companyId, bob.id)).toStrictEqual(bob)
    })

    it('allows the same email in two companies', async () => {
      const [a, b] = [await aStoredCompany(store), await aStoredCompany(store)]
      const inA = aUser(a, { email: 'same@example.com' })
      const inB = aUser(b, { email: 'SAME@example.com' })
      await store.users.save(a, [inA])
      await store.users.save(b, [inB])
      expect(await store.users.findByEmails(a, ['same@example.com'])).toStrictEqual(new Map([['same@example.com', inA]]))
      expect(await store.users.findByEmails(b, ['same@example.com'])).toStrictEqual(new Map([['same@example.com', inB]]))
    })
  })
}
