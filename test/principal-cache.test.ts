import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { PRINCIPAL_FRESH_MS, PrincipalCache } from '../src/auth/principal-cache.ts'
import { ManualClock } from '../src/clock.ts'
import { ForbiddenError, UnauthorizedError } from '../src/errors.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import type { Store } from '../src/store/port.ts'
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts'
import { smallFixture } from './helpers/fixtures.ts'

const SECRET = 'cak_the-owner-key-of-the-cache-test'

describe('authentication reused for a moment (PrincipalCache)', () => {
  let store: Store
  let companyId: string
  let now: number
  let lookups: number
  let cache: PrincipalCache

  beforeEach(async () => {
    store = openSqliteStore(':memory:')
    const loaded = await loadFixture(store, new ManualClock('2026-06-01T00:00:00.000Z'), {
      ...smallFixture(),
      api_keys: [{ user: 'owner@acme.example', secret: SECRET }],
    })
    companyId = loaded.company_id
    lookups = 0
    const findByHash = store.apiKeys.findByHash.bind(store.apiKeys)
    const counting: Store = {
      ...store,
      apiKeys: {
        ...store.apiKeys,
        findByHash: (hash) => {
          lookups++
          return findByHash(hash)
        },
      },
    }
    now = 1000
    cache = new PrincipalCache(counting, () => now)
  })
  afterEach(async () => {
    await store.close()
  })

  const owner = async () => (await store.users.findByEmails(companyId, ['owner@acme.example'])).get('owner@acme.example')!

  it('reads the store once for requests of one key a moment apart, and answers the same principal', async () => {
    const first = await cache.authenticate(SECRET)
    now += PRINCIPAL_FRESH_MS - 1
    const second = await cache.authenticate(SECRET)
    expect(lookups).toBe(1)
    expect(second).toBe(first)
    expect(first.user.email).toBe('owner@acme.example')
  })

  it('refuses a key archived by another process once its entry is PRINCIPAL_FRESH_MS old', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'principal-cache-'))
    const file = join(directory, 'commission-api.sqlite')
    const here = openSqliteStore(file)
    const elsewhere = openSqliteStore(file)
    try {
      const loaded = await loadFixture(here, new ManualClock(), {
        ...smallFixture('Shared'),
        api_keys: [{ user: 'owner@shared.example', secret: 'cak_the-shared-owner-key' }],
      })
      const shared = new PrincipalCache(here, () => now)
      await shared.authenticate('cak_the-shared-owner-key')
      const user = (await elsewhere.users.findByEmails(loaded.company_id, ['owner@shared.example'])).get('owner@shared.example')!
      await elsewhere.users.save(loaded.company_id, [{ ...user, status: 'archived' }])
      // This store did not write: its entry stands until it is PRINCIPAL_FRESH_MS old, then the archive is seen.
      now += PRINCIPAL_FRESH_MS - 1
      expect((await shared.authenticate('cak_the-shared-owner-key')).user.status).toBe('active')
      now += 1
      await expect(shared.authenticate('cak_the-shared-owner-key')).rejects.toBeInstanceOf(UnauthorizedError)
      // What the service promises every instance: a revoked key or an archived owner refused within one second.
      expect(PRINCIPAL_FRESH_MS).toBeLessThanOrEqual(1000)
    } finally {
      await here.close()
      await elsewhere.close()
      rmSync(directory, { recursive: true, force: true })
    }
  })

  it('refuses at the next request a key whose owner was archived through the same store', async () => {
    await cache.authenticate(SECRET)
    await store.users.save(companyId, [{ ...(await owner()), status: 'archived' }])
    await expect(cache.authenticate(SECRET)).rejects.toBeInstanceOf(UnauthorizedError)
    expect(lookups).toBe(2)
    // The refusal of a known key is remembered like a principal, and thrown afresh each time.
    const refusals = await Promise.all([
      cache.authenticate(SECRET).catch((error) => error),
      cache.authenticate(SECRET).catch((error) => error),
    ])
    expect(lookups).toBe(2)
    expect(refusals[0]).toBeInstanceOf(UnauthorizedError)
    expect(refusals[0]).not.toBe(refusals[1])
  })

  it('refuses at the next request the key of a company deleted through the same store', async () => {
    await cache.authenticate(SECRET)
    await store.companies.delete(companyId)
    await expect(cache.authenticate(SECRET)).rejects.toBeInstanceOf(UnauthorizedError)
  })

  it('refuses at the next request a key revoked through the same store, as an unknown key', async () => {
    await cache.authenticate(SECRET)
    const [key] = await store.apiKeys.list(companyId)
    expect(await store.apiKeys.delete(companyId, key.id)).toBe(true)
    await expect(cache.authenticate(SECRET)).rejects.toThrow(/^Invalid API key$/)
    expect(lookups).toBe(2)
  })

  it('does not remember an unknown key: every attempt is read, so that guesses cannot fill the memory', async () => {
    await expect(cache.authenticate('cak_no-such-key-at-all')).rejects.toBeInstanceOf(UnauthorizedError)
    await expect(cache.authenticate('cak_no-such-key-at-all')).rejects.toBeInstanceOf(UnauthorizedError)
    expect(lookups).toBe(2)
    await expect(cache.authenticate(undefined)).rejects.toThrow(/Missing API key/)
    expect(lookups).toBe(2)
  })

  it('freezes the principals it shares between requests', async () => {
    const principal = await cache.authenticate(SECRET)
    expect(Object.isFrozen(principal)).toBe(true)
    expect(Object.isFrozen(principal.company)).toBe(true)
    expect(Object.isFrozen(principal.user)).toBe(true)
  })

  it('keeps ForbiddenError for a company without the public API', async () => {
    const closed = await loadFixture(store, new ManualClock(), {
      ...smallFixture('Closed'),
      company: { name: 'Closed', default_currency: 'EUR', public_api_enabled: false },
      api_keys: [{ user: 'owner@closed.example', secret: 'cak_the-closed-company-key' }],
    })
    expect(closed.company_id).not.toBe(companyId)
    await expect(cache.authenticate('cak_the-closed-company-key')).rejects.toBeInstanceOf(ForbiddenError)
  })
})
