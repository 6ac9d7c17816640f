import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { expect, it } from 'vitest'
import type { Store } from '../../src/store/port.ts'
import { rateLimitFile } from '../../src/store/sqlite/rate-limits.ts'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts'
import { importStatisticsContract } from './import-statistics-contract.ts'
import { sharedImportQueueContract } from './imports-contract.ts'
import { rateLimitContract, sharedRateLimitContract } from './rate-limits-contract.ts'

const files = new Map<Store, string>()

const fileStores = {
  async create() {
    const file = join(mkdtempSync(join(tmpdir(), 'store-')), 'db.sqlite')
    const store = openSqliteStore(file)
    files.set(store, file)
    return store
  },
  openTwin: async (store: Store) => openSqliteStore(files.get(store)!),
  async cleanup(store: Store) {
    rmSync(dirname(files.get(store)!), { recursive: true, force: true })
    files.delete(store)
  },
}

rateLimitContract('sqlite (file)', fileStores)
sharedRateLimitContract('sqlite (file)', fileStores)
sharedImportQueueContract('sqlite (file)', fileStores)

rateLimitContract('sqlite (:memory:)', { create: async () => openSqliteStore(':memory:') })

it('keeps the counters in a file of their own beside the main file', async () => {
  const directory = mkdtempSync(join(tmpdir(), 'store-'))
  const store = openSqliteStore(join(directory, 'commission-api.sqlite'))
  try {
    await store.rateLimits.hit({ companyId: 'c' }, 1000, new Date())
    expect(rateLimitFile(join(directory, 'commission-api.sqlite'))).toBe(join(directory, 'commission-api.rate-limits.sqlite'))
    expect(existsSync(join(directory, 'commission-api.rate-limits.sqlite'))).toBe(true)
  } finally {
    await store.close()
    rmSync(directory, { recursive: true, force: true })
  }
})

importStatisticsContract('sqlite (file)', fileStores)
importStatisticsContract('sqlite (:memory:)', { create: async () => openSqliteStore(':memory:') })
