import { type Static, Type } from 'typebox'
import { currencyKey } from '../domain/money.ts'
import { OrNull } from '../domain/schemas.ts'
import { ownValue } from '../domain/stored-values.ts'
import { type User, type UserAttributeDefinition, USER_STATUSES } from '../store/model.ts'
import type { Store } from '../store/port.ts'
import { checkOffsetQuery, type OffsetPage, type OffsetQuery, pageUrl, readOffsetPage, type WalkPositions } from './offset-page.ts'

/**
 * A user as `GET /v1/users` shows it: the standard fields, then every custom attribute of the company under its
 * API key (null when unset).
 */
export const V1UserSchema = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    name: OrNull(Type.String()),
    status: Type.Enum([...USER_STATUSES]),
    role: OrNull(Type.String()),
    currency: OrNull(Type.String()),
    calculation_currency: OrNull(Type.String()),
  },
  { additionalProperties: true },
)
export type V1User = Static<typeof V1UserSchema> & { [attribute: string]: unknown }

/**
 * The user inside a deprecated reporting row; the user's custom attributes follow under their API keys. For a user
 * that no longer exists, only `id` is set.
 */
export const V1ReportingUserSchema = Type.Object(
  {
    id: Type.String(),
    email: OrNull(Type.String()),
    name: OrNull(Type.String()),
    role: OrNull(Type.String()),
    currency: OrNull(Type.String()),
    calculation_currency: OrNull(Type.String()),
    country: OrNull(Type.String()),
    code: OrNull(Type.String()),
  },
  { additionalProperties: true },
)
export type V1ReportingUser = Static<typeof V1ReportingUserSchema> & { [attribute: string]: unknown }

/**
 * Adds every custom attribute of the company to `row`, in definition order: `<key>`, and for an amount
 * attribute `<key>_currency` too. An attribute the user has no value for is null, so that every row has the
 * same keys. A key that `row` already has (a standard field) is not overwritten.
 */
function addCustomAttributes(
  row: Record<string, unknown>,
  definitions: readonly UserAttributeDefinition[],
  attributes: Record<string, unknown>,
): void {
  for (const { api_key: key, type } of definitions) {
    const keys = type === 'amount' ? [key, currencyKey(key)] : [key]
    for (const name of keys) if (!Object.hasOwn(row, name)) row[name] = ownValue(attributes, name) ?? null
  }
}

function v1User(user: User, definitions: readonly UserAttributeDefinition[]): V1User {
  const row: V1User = {
    id: user.id,
    email: user.email,
    name: user.name,
    status: user.status,
    role: user.role,
    currency: user.currency,
    calculation_currency: user.calculation_currency,
  }
  addCustomAttributes(row, definitions, user.attributes)
  return row
}

/**
 * The user of a deprecated reporting row. A statement or line may name a user that no longer exists: the
 * row keeps the id, and every other field is null.
 */
export function v1ReportingUser(userId: string, user: User | undefined, definitions: readonly UserAttributeDefinition[]): V1ReportingUser {
  const row: V1ReportingUser = {
    id: userId,
    email: user?.email ?? null,
    name: user?.name ?? null,
    role: user?.role ?? null,
    currency: user?.currency ?? null,
    calculation_currency: user?.calculation_currency ?? null,
    country: user?.country ?? null,
    code: user?.code ?? null,
  }
  addCustomAttributes(row, definitions, user?.attributes ?? {})
  return row
}

/** `GET /v1/users`: every user of the company, whatever their status, in id (creation) order. */
export async function listUsers(
  store: Store,
  companyId: string,
  query: OffsetQuery,
  base: string,
  positions: WalkPositions,
): Promise<OffsetPage<V1User>> {
  return readOffsetPage(
    checkOffsetQuery(query),
    {
      count: () => store.users.count(companyId),
      items: (window) => store.users.list(companyId, window),
      async rows(users) {
        const definitions = await store.userAttributes.list(companyId)
        return users.map((user) => v1User(user, definitions))
      },
    },
    pageUrl(base, '/v1/users'),
    { positions, list: companyId, store },
  )
}
