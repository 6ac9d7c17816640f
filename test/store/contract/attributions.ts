import { describe, expect, it } from 'vitest'
import { newId } from '../../../src/ids.ts'
import type { GroupAttribution, ManagerAttribution } from '../../../src/store/model.ts'
import type { Store } from '../../../src/store/port.ts'
import { aGroupAttribution, aManagerAttribution, byId } from '../builders.ts'
import { storePerTest, type StoreAdapter } from './support.ts'
import { aStoredCompany } from './world.ts'

export function attributionsContract(adapter: StoreAdapter): void {
  describe('attributions', () => {
    let store: Store
    storePerTest(adapter, (opened) => (store = opened))

    const kinds = [
      {
        name: 'managers',
        make: (companyId: string, userId: string) => aManagerAttribution(companyId, userId, newId()),
        replace: (companyId: string, userIds: string[], rows: Array<ManagerAttribution | GroupAttribution>) =>
          store.attributions.replaceManagers(companyId, userIds, rows as ManagerAttribution[]),
        list: (companyId: string) => store.attributions.listManagers(companyId),
        listOther: (companyId: string) => store.attributions.listGroups(companyId),
      },
      {
        name: 'groups',
        make: (companyId: string, userId: string) => aGroupAttribution(companyId, userId),
        replace: (companyId: string, userIds: string[], rows: Array<ManagerAttribution | GroupAttribution>) =>
          store.attributions.replaceGroups(companyId, userIds, rows as GroupAttribution[]),
        list: (companyId: string) => store.attributions.listGroups(companyId),
        listOther: (companyId: string) => store.attributions.listManagers(companyId),
      },
    ]

    for (const kind of kinds) {
      it(`replaces the ${kind.name} of the given users only, and lists them in id order`, async () => {
        const companyId = await aStoredCompany(store)
        const [ann, bob, eve] = [newId(), newId(), newId()]
        const first = [kind.make(companyId, ann), kind.make(companyId, ann), kind.make(companyId, bob), kind.make(companyId, eve)]
        await kind.replace(companyId, [ann, bob, eve], first.toReversed())
        expect(await kind.list(companyId)).toStrictEqual(byId(first))

        const annAgain = kind.make(companyId, ann)
        await kind.replace(companyId, [ann], [annAgain])
        expect(await kind.list(companyId)).toStrictEqual(byId([first[2], first[3], annAgain]))

        await kind.replace(companyId, [bob, newId()], [])
        expect(await kind.list(companyId)).toStrictEqual(byId([first[3], annAgain]))
        expect(await kind.listOther(companyId)).toStrictEqual([])
      })

      it(`removes the ${kind.name} of many users at once: a reader sees all of them or none`, async () => {
        const companyId = await aStoredCompany(store)
        const userIds = Array.from({ length: 2000 }, () => newId())
        await kind.replace(
          companyId,
          userIds,
          userIds.map((userId) => kind.make(companyId, userId)),
        )
        const removal = { over: false }
        const removing = kind.replace(companyId, userIds, []).finally(() => {
          removal.over = true
        })
        const seen = new Set<number>()
        while (!removal.over) seen.add((await kind.list(companyId)).length)
        await removing
        seen.add((await kind.list(companyId)).length)
        expect([...seen].filter((count) => count !== 0 && count !== userIds.length)).toStrictEqual([])
        expect(seen.has(0)).toBe(true)
      })
    }
  })
}
