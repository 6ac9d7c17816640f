import { ValidationError } from '../errors.ts'
import { reloadFixture } from '../fixtures/load-fixture.ts'
import type { Store } from '../store/port.ts'
import { existingCompany } from './company-admin.ts'

/** A company put back to its fixture, or left as it is (created before fixtures were kept with companies). */
export interface ResetOutcome {
  id: string
  name: string
  reset: boolean
}

/**
 * Puts the company back to the fixture it was created from, in one transaction: the same ids, the same keys
 * (those the fixture created; keys created later are gone), its plans' results calculated again, and nothing of
 * what was written since (imports included). Shared by the CLI and the /admin routes; nothing here knows about HTTP.
 */
export async function resetCompany(store: Store, companyId: string): Promise<ResetOutcome> {
  const company = await existingCompany(store, companyId)
  const origin = await store.companyOrigins.get(company.id)
  if (!origin) {
    throw new ValidationError({
      error: 'ConflictError',
      resource: 'company',
      description: 'the company was created before this version kept fixtures with companies: there is nothing to put it back to',
    })
  }
  await reloadFixture(store, origin)
  return { id: company.id, name: company.name, reset: true }
}

/** Puts every company back to its fixture, one after the other; a company without one is left as it is. */
export async function resetEveryCompany(store: Store): Promise<ResetOutcome[]> {
  const outcomes: ResetOutcome[] = []
  for (const company of await store.companies.list()) {
    const origin = await store.companyOrigins.get(company.id)
    if (origin) await reloadFixture(store, origin)
    outcomes.push({ id: company.id, name: company.name, reset: origin !== null })
  }
  return outcomes
}
