import { createApiKey } from '../auth/api-keys.ts'
import type { Clock } from '../clock.ts'
import { storedId } from '../domain/ids.ts'
import { isEmail } from '../domain/formats.ts'
import { NotFoundError, ValidationError } from '../errors.ts'
import { structureRowCount } from '../reporting/structures.ts'
import type { ApiKey, Company } from '../store/model.ts'
import type { Store } from '../store/port.ts'

/** Administration of companies, shared by the CLI and the /admin routes. Nothing here knows about HTTP. */

/**
 * The company an id names, as the CLI or an admin path gives it (in any letter case); NotFoundError when there is
 * none. Every admin service starts here, and goes on with the company's stored id.
 */
export async function existingCompany(store: Store, companyIdAsGiven: string): Promise<Company> {
  const companyId = storedId(companyIdAsGiven)
  const company = companyId ? await store.companies.get(companyId) : null
  if (!company) throw new NotFoundError('company')
  return company
}

/** A key as the inventory and the CLI show it, without its hash: whoever had the hash could test guessed secrets offline. */
const keySummary = (key: ApiKey) => ({ id: key.id, prefix: key.prefix, user_id: key.user_id, created_at: key.created_at })

/** The company's API keys, in creation order, each with its id (what a revocation names) and its display prefix. */
export async function companyKeys(store: Store, companyIdAsGiven: string) {
  const company = await existingCompany(store, companyIdAsGiven)
  return (await store.apiKeys.list(company.id)).map(keySummary)
}

/**
 * The company's settings, user count, keys (prefix only), every structure, quota and data table (sandbox
 * included) with how many rows are behind it, and its plans with the statements each calculated. The /admin
 * route's schema gives its shape.
 */
export async function companyInventory(store: Store, companyId: string) {
  const company = await existingCompany(store, companyId)
  const [structures, quotas, tables, keys, users, plans] = await Promise.all([
    store.structures.list(company.id),
    store.quotas.list(company.id),
    store.dataTables.list(company.id),
    store.apiKeys.list(company.id),
    store.users.count(company.id),
    store.plans.list(company.id),
  ])
  const items = await Promise.all([
    ...structures.map(async (structure) => ({
      id: structure.id,
      name: structure.name,
      type: structure.type,
      environment: structure.environment,
      total_records: await structureRowCount(store, structure),
    })),
    ...quotas.map(async ({ id, name, environment, status }) => ({
      id,
      name,
      type: 'quota' as const,
      environment,
      status,
      total_records: await store.quotaValues.count(company.id, id),
    })),
    ...tables.map(async ({ id, name, environment, key }) => ({
      id,
      name,
      type: 'data_table' as const,
      environment,
      key,
      total_records: await store.records.count(company.id, id),
    })),
  ])
  const { name, public_api_enabled, default_currency, fiscal_year_start_month } = company
  return {
    company: { id: company.id, name, public_api_enabled, default_currency, fiscal_year_start_month },
    users,
    api_keys: keys.map(keySummary),
    structures: items,
    plans: await Promise.all(
      plans.map(async (plan) => ({
        id: plan.id,
        name: plan.name,
        environment: plan.environment,
        data_table: tables.find((table) => table.id === plan.table_id)?.key ?? '',
        frequency: plan.frequency,
        statements: (await store.statements.findOfPlan(company.id, plan.id)).length,
      })),
    ),
  }
}

/**
 * Creates an API key for a user of the company, named by email, or for its first active user. Returns the
 * secret, which is shown once. The owner is found and the key stored in one transaction, which finds the company
 * there still: a key stored after a deletion committed (another instance's, the CLI's) would be left behind, its
 * company gone, and answered 201 though it never authenticates.
 */
export async function createCompanyKey(store: Store, clock: Clock, companyIdAsGiven: string, email?: string): Promise<string> {
  const companyId = (await existingCompany(store, companyIdAsGiven)).id
  if (email !== undefined && !isEmail(email))
    throw new ValidationError({ resource: 'user', description: 'expected the email of a user of the company' })
  return store.transaction(
    async (tx) => {
      await existingCompany(tx, companyId)
      let userId: string | undefined
      if (email !== undefined) {
        const user = (await tx.users.findByEmails(companyId, [email])).get(email.toLowerCase())
        if (!user) throw new NotFoundError('user', `No user with email ${email} in this company`)
        if (user.status === 'archived')
          throw new ValidationError({ resource: 'user', description: 'an archived user cannot own an API key' })
        userId = user.id
      } else {
        const total = await tx.users.count(companyId)
        userId = (await tx.users.list(companyId, { offset: 0, limit: total })).find((user) => user.status === 'active')?.id
        if (!userId) throw new ValidationError({ resource: 'user', description: 'the company has no active user to own a key' })
      }
      return createApiKey(tx, clock, companyId, userId)
    },
    { company: companyId },
  )
}

/**
 * Revokes one API key of the company, named by its id (the inventory lists them); answers its stored id.
 * NotFoundError (`api_key`) when the company has no such key, another company's included. This process's store
 * refuses the key from the next request on; other processes within their principal cache's half second
 * (`src/auth/principal-cache.ts`). A key a fixture created comes back with a reset of its company, as every key of the
 * fixture does.
 */
export async function revokeCompanyKey(store: Store, companyIdAsGiven: string, keyIdAsGiven: string): Promise<string> {
  const companyId = (await existingCompany(store, companyIdAsGiven)).id
  const keyId = storedId(keyIdAsGiven)
  if (keyId && (await store.apiKeys.delete(companyId, keyId))) return keyId
  // Its keys go with a company deleted since it was found: that is a 404 for the company, as a deletion met later is.
  await existingCompany(store, companyId)
  // Only an id is repeated: what names none may be a secret given by mistake, which no message shows.
  throw new NotFoundError(
    'api_key',
    keyId ? `No API key with id ${keyId} in this company` : "No API key has the id given: a key's id is 24 hex digits",
  )
}

/**
 * Deletes the company and everything it owns; answers its stored id. NotFoundError when there is none. Once `signal`
 * is aborted, the sweep of its rows stops between two writes and the call rejects with the signal's reason, the
 * company gone and its deletion marked (`companies.delete`).
 */
export async function deleteCompany(store: Store, companyIdAsGiven: string, signal?: AbortSignal): Promise<string> {
  const companyId = storedId(companyIdAsGiven)
  if (!companyId || !(await store.companies.delete(companyId, { signal }))) throw new NotFoundError('company')
  return companyId
}
