import { isEmail } from '../domain/formats.ts'
import type { Store } from '../store/port.ts'
import { isObject } from './outcome.ts'

/**
 * The users that the company's users imports still waiting (in their debounce window, or not yet run) create or
 * update, by lower-case email, each with the import that carries it: a call naming such a user before that import
 * is applied finds no user, and its refusal can say which import to wait for.
 */
export async function usersOfWaitingImports(tx: Store, companyId: string): Promise<Map<string, string>> {
  const waiting = (await tx.imports.list(companyId, { status: 'scheduled', limit: 100 })).filter((item) => item.target === 'users')
  const carriedBy = new Map<string, string>()
  for (const data of waiting) {
    for (const payload of await tx.imports.payloads(companyId, data.id)) {
      for (const item of payload.items) if (isObject(item) && isEmail(item.email)) carriedBy.set(item.email.toLowerCase(), data.id)
    }
  }
  return carriedBy
}
