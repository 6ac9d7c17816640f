import { createHash, randomBytes } from 'node:crypto'
import type { Clock } from '../clock.ts'
import { ForbiddenError, UnauthorizedError } from '../errors.ts'
import { newId } from '../ids.ts'
import type { ApiKey, Company, User } from '../store/model.ts'
import type { Store } from '../store/port.ts'

const SECRET_PREFIX = 'cak_'

/** SHA-256 of a key's secret: what the store keeps, and what a presented key is looked up by. */
export function hashApiKey(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex')
}

/** A new random secret. It is shown once, when created, and never stored. */
export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64url')
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
    prefix: secret.slice(0, SECRET_PREFIX.length + 4),
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

/**
 * The principal of a presented key. An unknown key, or one whose owner is archived or gone, is
 * UnauthorizedError; a company without the public API is ForbiddenError.
 */
export async function authenticate(store: Store, secret: string | undefined): Promise<Principal> {
  if (!secret) throw new UnauthorizedError('Missing API key: send it in the X-API-Key header')
  const key = await store.apiKeys.findByHash(hashApiKey(secret))
  if (!key) throw new UnauthorizedError('Invalid API key')
  const [company, user] = await Promise.all([store.companies.get(key.company_id), store.users.get(key.company_id, key.user_id)])
  if (!company || !user || user.status === 'archived') throw new UnauthorizedError('Invalid API key')
  if (!company.public_api_enabled) throw new ForbiddenError('The public API is not enabled for this company')
  return { company, user, key }
}
