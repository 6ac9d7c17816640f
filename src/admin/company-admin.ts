import { type Static, Type } from 'typebox'
import { createApiKey } from '../auth/api-keys.ts'
import { structureRowCount } from '../v2/data-structures.ts'
import type { Clock } from '../clock.ts'
import { NotFoundError, ValidationError } from '../errors.ts'
import type { Store } from '../store/port.ts'

/** Administration of companies, shared by the CLI and the /admin routes. Nothing here knows about HTTP. */

const InventoryItemSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: Type.Enum(['statement_reporting', 'record_reporting', 'quota', 'data_table']),
  environment: Type.Enum(['live', 'sandbox']),
  /** Data tables only: the table API name (`data_table_key`). */
  key: Type.Optional(Type.String()),
  /** Quotas only. */
  status: Type.Optional(Type.String()),
  /** Statements, commission lines, quota values or records behind the item. */
  total_records: Type.Integer(),
})
export type InventoryItem = Static<typeof InventoryItemSchema>

export const CompanyInventorySchema = Type.Object({
  company: Type.Object({
    id: Type.String(),
    name: Type.String(),
    public_api_enabled: Type.Boolean(),
    default_currency: Type.String(),
    fiscal_year_start_month: Type.Integer(),
  }),
  users: Type.Integer(),
  api_keys: Type.Array(Type.Object({ id: Type.String(), prefix: Type.String(), user_id: Type.String(), created_at: Type.String() })),
  structures: Type.Array(InventoryItemSchema),
  /** The plans, with the statements each calculated. */
  plans: Type.Array(
    Type.Object({
      id: Type.String(),
      name: Type.String(),
      environment: Type.Enum(['live', 'sandbox']),
      data_table: Type.String({ description: 'the key of the data table it reads' }),
      frequency: Type.String(),
      statements: Type.Integer(),
    }),
  ),
})
export type CompanyInventory = Static<typeof CompanyInventorySchema>

/** The id of a company that exists (ids are compared in lower case); NotFoundError otherwise. */
export async function existingCompany(store: Store, id: string): Promise<string> {
  const companyId = id.toLowerCase()
  if (!(await store.companies.get(companyId))) throw new NotFoundError('company')
  return companyId
}

/** Every structure, quota and data table of a company, sandbox included. */
export async function companyInventory(store: Store, companyId: string): Promise<CompanyInventory> {
  const company = await store.companies.get(companyId)
  if (!company) throw new NotFoundError('company')
  const [structures, quotas, tables, keys, users, plans] = await Promise.all([
    store.structures.list(companyId),
    store.quotas.list(companyId),
    store.dataTables.list(companyId),
    store.apiKeys.list(companyId),
    store.users.count(companyId),
    store.plans.list(companyId),
  ])
  const items: InventoryItem[] = []
  for (const structure of structures) {
    const total = await structureRowCount(store, structure)
    items.push({ id: structure.id, name: structure.name, type: structure.type, environment: structure.environment, total_records: total })
  }
  for (const quota of quotas) {
    const total = await store.quotaValues.count(companyId, quota.id)
    items.push({ id: quota.id, name: quota.name, type: 'quota', environment: quota.environment, status: quota.status, total_records: total })
  }
  for (const table of tables) {
    const total = await store.records.count(companyId, table.id)
    items.push({ id: table.id, name: table.name, type: 'data_table', environment: table.environment, key: table.key, total_records: total })
  }
  const { id, name, public_api_enabled, default_currency, fiscal_year_start_month } = company
  return {
    company: { id, name, public_api_enabled, default_currency, fiscal_year_start_month },
    users,
    api_keys: keys.map((key) => ({ id: key.id, prefix: key.prefix, user_id: key.user_id, created_at: key.created_at })),
    structures: items,
    plans: await Promise.all(
      plans.map(async (plan) => ({
        id: plan.id,
        name: plan.name,
        environment: plan.environment,
        data_table: tables.find((table) => table.id === plan.table_id)?.key ?? '',
        frequency: plan.frequency,
        statements: (await store.statements.findOfPlan(companyId, plan.id)).length,
      })),
    ),
  }
}

/**
 * Creates an API key for a user of the company, named by email, or for its first active user. Returns the
 * secret, which is shown once.
 */
export async function createCompanyKey(store: Store, clock: Clock, companyId: string, email?: string): Promise<string> {
  if (!(await store.companies.get(companyId))) throw new NotFoundError('company')
  let userId: string | undefined
  if (email) {
    const user = (await store.users.findByEmails(companyId, [email])).get(email.toLowerCase())
    if (!user) throw new NotFoundError('user', `No user with email ${email} in this company`)
    if (user.status === 'archived') throw new ValidationError({ resource: 'user', description: 'an archived user cannot own an API key' })
    userId = user.id
  } else {
    const total = await store.users.count(companyId)
    userId = (await store.users.list(companyId, { offset: 0, limit: total })).find((user) => user.status === 'active')?.id
    if (!userId) throw new ValidationError({ resource: 'user', description: 'the company has no active user to own a key' })
  }
  return createApiKey(store, clock, companyId, userId)
}
