import type { Clock } from '../clock.ts'
import { isEmail, isMonthString } from '../domain/formats.ts'
import {
  firstArchivedMonthOf,
  LAST_MONTH,
  lastActiveMonthOf,
  managesWhileArchived,
  type MonthRange,
  nextMonth,
  previousMonth,
} from '../domain/periods.ts'
import { type Issue, ValidationError } from '../errors.ts'
import { recalculate, stampedBy } from '../calculation/recalculation.ts'
import type { User } from '../store/model.ts'
import type { Store } from '../store/port.ts'
import { usersOfWaitingImports, waitFor } from '../imports/waiting-users.ts'

/** At most this many users per `DELETE /v1/users/archive/bulk` call. */
export const MAX_ARCHIVED_PER_CALL = 50

export const ARCHIVED_MESSAGE = 'users archived successfully'

interface ArchiveRequest {
  user: User
  email: string
  /** YYYY-MM, the last month of activity: the `end_date` given, else the month before the current one. */
  lastActiveMonth: string
}

/**
 * Archives users synchronously, all or nothing: every item is checked (its email, its `end_date`, that the
 * user exists, that the user manages nobody in the archive period) and any problem refuses the whole call
 * with every problem listed, each with its own family (`ValidationError`, `NotFoundError`, `ConflictError`), as
 * one 400 (docs/decisions.md, "Archive"). The archive period starts the month after `end_date`, or the current
 * month without one. A person managed in that period is no conflict in the months after their own last active
 * month (archived already, or by the same call). The transaction names the company: a manager attribution imported meanwhile on another
 * instance cannot commit beside an archive that checked the attributions before it.
 */
export async function archiveUsers(store: Store, clock: Clock, companyId: string, items: readonly unknown[]): Promise<void> {
  // The refusals of users not found, by their email: named with a users import not applied yet that creates them.
  let unknownUsers: { email: string; issue: Issue }[] = []
  try {
    await store.transaction(
      async (tx) => {
        unknownUsers = []
        // Read once the transaction holds the store: another writer may have held it for seconds (an incremental v2
        // sync reads a row once it is committed, and its mark is taken from the time).
        const timing = await stampedBy(clock, tx)
        const { now } = timing
        const currentMonth = now.slice(0, 7)
        const issues: Issue[] = []
        const wanted = readItems(items, issues)
        const found = await tx.users.findByEmails(
          companyId,
          wanted.map((item) => item.email),
        )
        const requests: ArchiveRequest[] = []
        for (const { email, endDate, line, valid } of wanted) {
          const user = found.get(email.toLowerCase())
          if (!user) {
            const issue: Issue = { error: 'NotFoundError', resource: 'user', description: `line ${line}: no user with email ${email}` }
            issues.push(issue)
            unknownUsers.push({ email, issue })
          } else if (valid) requests.push({ user, email, lastActiveMonth: endDate ?? previousMonth(currentMonth) })
        }
        issues.push(...(await managerConflicts(tx, companyId, requests)))
        if (issues.length > 0) throw new ValidationError(issues)
        // The last month of activity is kept whether or not it was given: plans pay an archived user up to it.
        const archived = requests.map(({ user, lastActiveMonth }) => ({
          ...user,
          status: 'archived' as const,
          archived_until: lastActiveMonth,
          modified_at: now,
        }))
        await tx.users.save(companyId, archived)
        await recalculate(tx, companyId, { users: new Set(archived.map((user) => user.id)) }, timing)
      },
      { company: companyId },
    )
  } catch (error) {
    // A read that fails here (a busy store) leaves the refusal as it is, rather than answer it as the store's failure.
    if (error instanceof ValidationError && unknownUsers.length > 0)
      await nameWaitingUsersImports(store, companyId, unknownUsers).catch(() => {})
    throw error
  }
}

/**
 * A user not found that a users import not applied yet creates: the refusal names that import, as an attribution's
 * does. Read once the archive's transaction is over, since it reads the waiting imports' payloads.
 */
async function nameWaitingUsersImports(store: Store, companyId: string, unknownUsers: { email: string; issue: Issue }[]): Promise<void> {
  const waiting = await usersOfWaitingImports(store, companyId)
  for (const { email, issue } of unknownUsers) {
    const creating = waiting.get(email.toLowerCase())
    if (creating) issue.description += waitFor(creating, 'archive the user')
  }
}

/**
 * The items whose user can be looked up (an email given once), `valid` when nothing else is wrong with them: an
 * unknown user is reported whatever else is, so that the refusal lists every problem.
 */
function readItems(items: readonly unknown[], issues: Issue[]): { email: string; endDate: string | null; line: number; valid: boolean }[] {
  const seen = new Set<string>()
  const wanted: { email: string; endDate: string | null; line: number; valid: boolean }[] = []
  items.forEach((item, index) => {
    const line = index + 1
    const before = issues.length
    const invalid = (resource: string, description: string) => issues.push({ resource, description: `line ${line}: ${description}` })
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return void invalid('data', 'expected {user, end_date}')
    const { user, end_date: endDate = null, ...rest } = item as Record<string, unknown>
    for (const key of Object.keys(rest)) invalid(key, 'unknown field')
    if (!isEmail(user)) invalid('user', 'expected the email of a user')
    else if (seen.has(user.toLowerCase())) invalid('user', `${user} is given twice`)
    if (endDate !== null && !isMonthString(endDate)) invalid('end_date', `expected a month YYYY-MM, got ${JSON.stringify(endDate)}`)
    if (!isEmail(user) || seen.has(user.toLowerCase())) return
    seen.add(user.toLowerCase())
    wanted.push({ email: user, endDate: endDate as string | null, line, valid: issues.length === before })
  })
  return wanted
}

/**
 * A user to archive who manages someone still active in the archive period, or one archived again who would be
 * active under a manager archived already in that manager's archive period: one ConflictError each.
 */
async function managerConflicts(tx: Store, companyId: string, requests: readonly ArchiveRequest[]): Promise<Issue[]> {
  if (requests.length === 0) return []
  const leaving = new Map(requests.map((request) => [request.user.id, request]))
  const attributions = await tx.attributions.listManagers(companyId)
  const managed = attributions.filter((item) => leaving.has(item.manager_id))
  // A manager archived by this call is checked from its side (below); one archived before, from its people's.
  const managing = attributions.filter((item) => leaving.has(item.user_id) && !leaving.has(item.manager_id))
  const people = await tx.users.getMany(companyId, [...managed.map((item) => item.user_id), ...managing.map((item) => item.manager_id)])
  const issues: Issue[] = []
  for (const attribution of managing) {
    const request = leaving.get(attribution.user_id)!
    const manager = people.get(attribution.manager_id)
    const archivedFrom = manager ? firstArchivedMonthOf(manager) : undefined
    if (!manager || archivedFrom === undefined || !managesWhileArchived(attribution, archivedFrom, request.lastActiveMonth)) continue
    issues.push({
      error: 'ConflictError',
      resource: 'user',
      description: `${request.email} would be active up to ${request.lastActiveMonth}, managed by ${manager.email} (${monthsOf(attribution)}), who is archived from ${archivedFrom}`,
    })
  }
  for (const attribution of managed) {
    const request = leaving.get(attribution.manager_id)!
    const person = people.get(attribution.user_id)
    // Active up to the last month there is: the archive period is empty.
    if (!person || request.lastActiveMonth === LAST_MONTH) continue
    const archivedFrom = nextMonth(request.lastActiveMonth)
    // A person archived by the same call is active up to the month it gives them.
    const personActiveUntil = leaving.get(person.id)?.lastActiveMonth ?? lastActiveMonthOf(person)
    if (!managesWhileArchived(attribution, archivedFrom, personActiveUntil)) continue
    issues.push({
      error: 'ConflictError',
      resource: 'user',
      description: `${request.email} manages ${person.email} (${monthsOf(attribution)}) in the archive period starting ${archivedFrom}`,
    })
  }
  return issues
}

const monthsOf = (range: MonthRange) => `${range.start_month ?? 'the beginning'} to ${range.end_month ?? 'no end'}`
