import { isEmail } from '../domain/formats.ts'
import type { DataImport } from '../store/model.ts'
import type { Store } from '../store/port.ts'
import { isObject } from './outcome.ts'

/**
 * How many of the company's users imports not applied yet are read, of each status, payloads and all: the latest,
 * among which the one a client just sent. A user that only an older one creates is not named.
 */
const READ_IMPORTS = 100

/** A users import not applied yet that creates a user, and whether it is being applied. */
export interface WaitingUsersImport {
  id: string
  status: 'scheduled' | 'started'
}

/**
 * The users that the company's users imports not applied yet (in their debounce window, waiting for a worker, or
 * being applied) create or update, by lower-case email, each with the import that carries it (the one applied
 * first, when several do): a call naming such a user before that import is applied finds no user, and its refusal
 * can say which import to wait for.
 */
export async function usersOfWaitingImports(tx: Store, companyId: string): Promise<Map<string, WaitingUsersImport>> {
  // Read apart, so that however many wait, the one being applied is read; newest first, the imports applied first
  // last, so that their name is kept.
  const waiting: DataImport[] = []
  for (const status of ['scheduled', 'started'] as const)
    waiting.push(...(await tx.imports.list(companyId, { status, target: 'users', limit: READ_IMPORTS })))
  const carriedBy = new Map<string, WaitingUsersImport>()
  for (const data of waiting) {
    const named: WaitingUsersImport = { id: data.id, status: data.status === 'started' ? 'started' : 'scheduled' }
    for (const payload of await tx.imports.payloads(companyId, data.id)) {
      for (const item of payload.items) if (isObject(item) && isEmail(item.email)) carriedBy.set(item.email.toLowerCase(), named)
    }
  }
  return carriedBy
}

/** What a refusal says of the users import that creates its user: `then` says what to do once it is applied. */
export function waitFor(creating: WaitingUsersImport, then: string): string {
  const state = creating.status === 'started' ? 'is being applied' : 'is still scheduled'
  return ` (users import ${creating.id}, which creates that user, ${state}: ${then} once it is applied)`
}
