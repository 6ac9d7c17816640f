import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type Store, StoreFullError } from '../../src/store/port.ts'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts'
import { aCompany, aUser } from './builders.ts'
import { type StoreAdapter, storeContract } from './contract.ts'
import { fillLeaving, mountSmallDisk, SMALL_DISKS, SMALL_DISKS_NOTE, unmount } from '../helpers/small-disk.ts'

const directories = new Map<Store, string>()

/**
 * Stores on a file of their own, removed after the test: reads go through the reader connection, and a twin is a
 * second connection to the file, as another process opens it.
 */
const fileStores: StoreAdapter = {
  async create() {
    const directory = mkdtempSync(join(tmpdir(), 'store-'))
    const store = openSqliteStore(join(directory, 'db.sqlite'))
    directories.set(store, directory)
    return store
  },
  openTwin: async (store) => openSqliteStore(join(directories.get(store) ?? '', 'db.sqlite')),
  async cleanup(store) {
    rmSync(directories.get(store) ?? '', { recursive: true, force: true })
    directories.delete(store)
  },
}

/** In-memory stores: the database lives in its one connection, so a store is its own twin. */
const memoryStores: StoreAdapter = {
  create: async () => openSqliteStore(':memory:'),
  openTwin: async (store) => store,
}

storeContract('sqlite (file)', fileStores)
storeContract('sqlite (:memory:)', memoryStores)

describe('sqlite (file), adapter only', () => {
  let directory: string
  let file: string
  const opened: Store[] = []

  function open(): Store {
    const store = openSqliteStore(file)
    opened.push(store)
    return store
  }

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'store-'))
    file = join(directory, 'db.sqlite')
  })

  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close()
    rmSync(directory, { recursive: true, force: true })
  })

  it('keeps the data when the file is opened again', async () => {
    const company = aCompany()
    const user = aUser(company.id)
    const first = open()
    await first.companies.insert(company)
    await first.users.save(company.id, [user])
    await first.close()

    const again = open()
    expect(await again.companies.get(company.id)).toStrictEqual(company)
    expect(await again.users.get(company.id, user.id)).toStrictEqual(user)
  })

  it("lets two stores on one file, like two processes, see each other's committed writes", async () => {
    const [one, two] = [open(), open()]
    const [a, b] = [aCompany(), aCompany()]
    await one.companies.insert(a)
    expect(await two.companies.get(a.id)).toStrictEqual(a)
    await two.transaction((tx) => tx.companies.insert(b))
    expect(await one.companies.get(b.id)).toStrictEqual(b)
  })

  it('hides a transaction in progress on one store from a reader on another until it commits', async () => {
    const [writer, reader] = [open(), open()]
    const company = aCompany()
    const user = aUser(company.id)
    let wrote!: () => void
    const written = new Promise<void>((resolve) => {
      wrote = resolve
    })
    let release!: () => void
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    const running = writer.transaction(async (tx) => {
      await tx.companies.insert(company)
      await tx.users.save(company.id, [user])
      wrote()
      await released
    })
    await written
    expect(await reader.companies.get(company.id)).toBeNull()
    expect(await reader.users.count(company.id)).toBe(0)
    // The writer's own store, outside the transaction, does not see it either.
    expect(await writer.companies.get(company.id)).toBeNull()
    release()
    await running
    expect(await reader.companies.get(company.id)).toStrictEqual(company)
    expect(await reader.users.get(company.id, user.id)).toStrictEqual(user)
  })

  it("waits for another connection's write lock on a timer, so that the event loop goes on meanwhile", async () => {
    const [holder, waiter] = [open(), open()]
    const [first, second] = [aCompany(), aCompany()]
    let locked!: () => void
    const lockTaken = new Promise<void>((resolve) => {
      locked = resolve
    })
    let release!: () => void
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    const holding = holder.transaction(async (tx) => {
      await tx.companies.insert(first)
      locked()
      await released
    })
    await lockTaken
    let written = false
    const writing = waiter.companies.insert(second).then(() => {
      written = true
    })
    // A timer fires while the write waits: the thread is not asleep inside SQLite.
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(written).toBe(false)
    release()
    await holding
    await writing
    expect(await waiter.companies.get(first.id)).toStrictEqual(first)
    expect(await waiter.companies.get(second.id)).toStrictEqual(second)
  })
})

describe.skipIf(!SMALL_DISKS)(`sqlite on a disk that fills up${SMALL_DISKS_NOTE}`, () => {
  it('refuses a write with StoreFullError, in a transaction or not, writing nothing of it; writes again once there is room', async () => {
    const disk = mountSmallDisk('16m')
    const store = openSqliteStore(join(disk, 'db.sqlite'))
    try {
      const company = aCompany()
      await store.companies.insert(company)
      const many = (prefix: string) =>
        Array.from({ length: 400 }, (_, index) => aUser(company.id, { email: `${prefix}${index}@acme.example`, name: 'x'.repeat(10_000) }))
      const filler = fillLeaving(disk, 0)
      await expect(store.users.save(company.id, many('alone'))).rejects.toBeInstanceOf(StoreFullError)
      // Inside a transaction, SQLite rolls the whole of it back itself: the error says why, not that its savepoint is gone.
      const inTransaction = store.transaction(async (tx) => {
        await tx.users.save(company.id, many('inside'))
      })
      await expect(inTransaction).rejects.toBeInstanceOf(StoreFullError)
      await expect(inTransaction).rejects.toThrow(/disk is full/)
      expect(await store.users.count(company.id)).toBe(0)

      rmSync(filler)
      await store.users.save(company.id, many('later'))
      expect(await store.users.count(company.id)).toBe(400)
    } finally {
      await store.close()
      unmount(disk)
    }
  })
})

describe('sqlite (:memory:), adapter only', () => {
  it('gives every opened store its own database', async () => {
    const [one, two] = [openSqliteStore(':memory:'), openSqliteStore(':memory:')]
    const company = aCompany()
    await one.companies.insert(company)
    expect(await two.companies.get(company.id)).toBeNull()
    await one.close()
    await two.close()
  })
})
