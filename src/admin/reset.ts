import { type Static, Type } from 'typebox'
import { ErrorItemSchema } from '../domain/schemas.ts'
import { NotFoundError, ValidationError } from '../errors.ts'
import { reloadFixture } from '../fixtures/load-fixture.ts'
import type { CompanyOrigin } from '../store/company-origins.ts'
import type { Store } from '../store/port.ts'
import { existingCompany } from './company-admin.ts'

/** A company put back to its fixture, or left as it is (created before fixtures were kept with companies). */
export const ResetOutcomeSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  reset: Type.Boolean({
    description:
      'false: the company was created before fixtures were kept with companies, or (with problems) its fixture is refused by the rules of this version, and it is left as it is',
  }),
  problems: Type.Optional(Type.Array(ErrorItemSchema, { description: 'Why its fixture was not written again (a reset of every company)' })),
})
export type ResetOutcome = Static<typeof ResetOutcomeSchema>

/**
 * Puts the company back to the fixture it was created from, in one transaction: the same ids, the same keys
 * (those the fixture created; keys created later are gone), its plans' results calculated again, and nothing of
 * what was written since (imports included). Shared by the CLI and the /admin routes; nothing here knows about HTTP.
 */
export async function resetCompany(store: Store, companyId: string): Promise<ResetOutcome> {
  const company = await existingCompany(store, companyId)
  const origin = await store.companyOrigins.get(company.id)
  if (!origin) {
    // Its origin goes with a company deleted since it was found: that is a 404, as a deletion met later is.
    await existingCompany(store, company.id)
    throw new ValidationError({
      error: 'ConflictError',
      resource: 'company',
      description: 'the company was created before this version kept fixtures with companies: there is nothing to put it back to',
    })
  }
  await reloadFixture(store, origin)
  return { id: company.id, name: company.name, reset: true }
}

/**
 * Puts every company back to its fixture, one after the other; a company without one is left as it is, and so is
 * one whose fixture the rules of this version refuse (loaded by an earlier one), with the problems, so that one
 * such company does not keep the others from being reset. A company deleted while they are reset is left out.
 */
export async function resetEveryCompany(store: Store): Promise<ResetOutcome[]> {
  const outcomes: ResetOutcome[] = []
  for (const company of await store.companies.list()) {
    const origin = await store.companyOrigins.get(company.id)
    // No origin: created before fixtures were kept, or deleted since the list was read (its origin with it).
    if (!origin && !(await store.companies.get(company.id))) continue
    try {
      outcomes.push({ id: company.id, name: company.name, ...(origin ? await reloadedOrRefused(store, origin) : { reset: false }) })
    } catch (error) {
      // Deleted since the list was read: it is gone, as its deletion said, and the others are reset all the same.
      if (!(error instanceof NotFoundError)) throw error
    }
  }
  return outcomes
}

/** The fixture written again, or the problems for which the rules of this version refuse it. */
async function reloadedOrRefused(store: Store, origin: CompanyOrigin): Promise<Pick<ResetOutcome, 'reset' | 'problems'>> {
  try {
    await reloadFixture(store, origin)
    return { reset: true }
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error
    return { reset: false, problems: error.issues.map((issue) => ({ ...issue, error: issue.error ?? 'ValidationError' })) }
  }
}
