import { hash as digestOf, randomBytes } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import type { Clock } from '../clock.ts'
import { ForbiddenError, UnauthorizedError } from '../errors.ts'
import { newId } from '../ids.ts'
import { API_KEY_PREFIX } from '../domain/formats.ts'
import type { ApiKey, Company, User } from '../store/model.ts'
import type { Store } from '../store/port.ts'

/** A secret of the service's form, within a value: the prefix and at least 16 of the characters `generateSecret` writes. */
const SECRET_SHAPED = new RegExp(`${API_KEY_PREFIX}[\\w-]{16,}`)

/** No secret is shorter: the admin token, and every key's, those a store kept from older versions' fixtures included. */
const SHORTEST_SECRET = 16

/**
 * Whether a value a request carries (a query value, a path segment, a request id) holds a secret: an API key of the
 * service's form, or one of the `known` secrets (`secretsOf`: the key the request presents, since a fixture of an
 * older version could give a key of any form, and the admin token), as written or percent-decoded (a path keeps its
 * encoding: `%63ak_…` is `cak_…`). Such a value is never written to a log line or the request journal.
 */
export function carriesSecret(value: string, known: readonly unknown[]): boolean {
  return holdsSecret(value, known) || (value.includes('%') && holdsSecret(percentDecoded(value), known))
}

/** The secrets a request may carry beside keys of the service's form: the key it presents, and the admin token. */
export function secretsOf(request: { headers: IncomingHttpHeaders }, adminToken: string | null | undefined): unknown[] {
  return [request.headers['x-api-key'], adminToken]
}

function holdsSecret(value: string, known: readonly unknown[]): boolean {
  return (
    SECRET_SHAPED.test(value) ||
    known.some((secret) => typeof secret === 'string' && secret.length >= SHORTEST_SECRET && value.includes(secret))
  )
}

/**
 * A value percent-decoded. Where it is not valid percent-encoding throughout (a `%zz` elsewhere in the path), its
 * ASCII escapes are decoded all the same, and the others kept as written: the keys' characters are ASCII, and one
 * bad escape must not hide a key encoded beside it.
 */
export function percentDecoded(value: string): string {
  try {
    return decodeURIComponent(value)
  } catch {
    return value.replace(/%([0-7][0-9a-f])/gi, (_escape, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
  }
}

/** Whether `value`, as written or percent-decoded, is the secret of a key of the service, whatever its form. */
export async function isKeySecret(store: Store, value: string): Promise<boolean> {
  const decoded = percentDecoded(value)
  for (const candidate of decoded === value ? [value] : [value, decoded]) {
    if (candidate.length >= SHORTEST_SECRET && (await store.apiKeys.findByHash(hashApiKey(candidate))) !== null) return true
  }
  return false
}

/** SHA-256 of a key's secret: what the store keeps, and what a presented key is looked up by. */
export function hashApiKey(secret: string): string {
  // The one-shot hash: a presented key is hashed on every request, and a Hash object per request costs more.
  return digestOf('sha256', secret, 'hex')
}

/** A new random secret. It is shown once, when created, and never stored. */
export function generateSecret(): string {
  return API_KEY_PREFIX + randomBytes(24).toString('base64url')
}

/** Stores a key for `user` (a given secret, or a new one) and returns the secret. */
export async function createApiKey(
  store: Store,
  clock: Clock,
  companyId: string,
  userId: string,
  secret: string = generateSecret(),
): Promise<string> {
  const key: ApiKey = {
    id: newId(),
    company_id: companyId,
    user_id: userId,
    hash: hashApiKey(secret),
    prefix: secret.slice(0, API_KEY_PREFIX.length + 4),
    created_at: clock.now().toISOString(),
  }
  await store.apiKeys.insert(key)
  return secret
}

/** Who a request acts for. */
export interface Principal {
  company: Company
  user: User
  key: ApiKey
}

/** Why a key the store knows does not authenticate: its owner is archived or gone, or its company has the API off. */
export type KeyRefusal = 'invalid' | 'forbidden'

/** What the key with this hash authenticates as: its principal, why it is refused, or null for no such key. */
export async function lookUpKey(store: Store, hash: string): Promise<Principal | KeyRefusal | null> {
  const key = await store.apiKeys.findByHash(hash)
  if (!key) return null
  const [company, user] = await Promise.all([store.companies.get(key.company_id), store.users.get(key.company_id, key.user_id)])
  if (!company || !user || user.status === 'archived') return 'invalid'
  if (!company.public_api_enabled) return 'forbidden'
  return { company, user, key }
}

/** The principal of an outcome of `lookUpKey`; a refusal is thrown as its error, made afresh. */
export function principalOf(outcome: Principal | KeyRefusal | null): Principal {
  if (outcome === null || outcome === 'invalid') throw new UnauthorizedError('Invalid API key')
  if (outcome === 'forbidden') throw new ForbiddenError('The public API is not enabled for this company')
  return outcome
}

/**
 * The principal of a presented key. An unknown key, or one whose owner is archived or gone, is
 * UnauthorizedError; a company without the public API is ForbiddenError.
 */
export async function authenticate(store: Store, secret: string | undefined): Promise<Principal> {
  if (!secret) throw missingKey()
  return principalOf(await lookUpKey(store, hashApiKey(secret)))
}

export function missingKey(): UnauthorizedError {
  return new UnauthorizedError('Missing API key: send it in the X-API-Key header')
}
