import { isEmail, isMonthString } from '../domain/formats.ts'
import {
  firstArchivedMonthOf,
  lastActiveMonthOf,
  managesWhileArchived,
  type MonthRange,
  monthRangesOverlap,
  monthRangeWithout,
} from '../domain/periods.ts'
import { newId } from '../ids.ts'
import type { Company, GroupAttribution, ImportItemIssue, ManagerAttribution, User } from '../store/model.ts'
import type { Store } from '../store/port.ts'
import { allApplied, isObject, type PayloadOutcome, refused } from './outcome.ts'
import { usersOfWaitingImports, waitFor } from './waiting-users.ts'

/**
 * One item of `PUT /v1/users/managers/bulk` or `PUT /v1/users/groups/bulk`, read: who it is about, the
 * dimension in which a user holds one value per month (the group dimension for groups; managers have one,
 * `''`), the months, and the value (the manager's user id or the group name; null: none in those months).
 */
interface Placement extends MonthRange {
  line: number
  userId: string
  dimension: string
  value: string | null
}

type Kind = 'managers' | 'groups'

const FIELDS: Record<Kind, readonly string[]> = {
  managers: ['user', 'manager', 'start_date', 'end_date'],
  groups: ['user', 'group_dimension', 'group', 'start_date', 'end_date'],
}

/**
 * Applies one attribution call, all or nothing: every item must name existing users and valid months; no two
 * manager items may name the same user (as the real documentation says, whatever their months), and no two
 * group items may give a user two groups of one dimension in one month. A missing `start_date` is an open
 * start (from the beginning). New months override the stored ones they overlap; stored months outside them stay.
 */
export async function applyAttributions(tx: Store, company: Company, kind: Kind, items: readonly unknown[]): Promise<PayloadOutcome> {
  const emails = items.flatMap((item) => (isObject(item) ? [item.user, item.manager].filter(isEmail) : []))
  const users = await tx.users.findByEmails(company.id, emails)
  const invalid: ImportItemIssue[] = []
  const placements: Placement[] = []
  items.forEach((item, index) => {
    const line = index + 1
    const read = isObject(item) ? readPlacement(kind, item, users, line) : { problems: ['expected an object'] }
    const clash = 'placement' in read ? placements.find((other) => clashes(kind, other, read.placement)) : undefined
    const problems = clash ? [clashProblem(kind, clash)] : read.problems
    if (problems.length > 0) invalid.push({ line_number: line, row: item, details: problems.join('; ') })
    else if ('placement' in read) placements.push(read.placement)
  })
  if (invalid.length > 0) {
    await nameWaitingUsersImport(tx, company.id, invalid)
    return refused(kind === 'managers' ? 'manager attribution' : 'group attribution', invalid)
  }

  const userIds = [...new Set(placements.map((placement) => placement.userId))]
  if (kind === 'managers') {
    const stored = (await tx.attributions.listManagers(company.id)).filter((item) => userIds.includes(item.user_id))
    const kept = stored.flatMap((item) => cut(item, { ...item, dimension: '' }, placements))
    const added = placements.flatMap((placement) => (placement.value === null ? [] : [managerOf(company, placement, placement.value)]))
    await tx.attributions.replaceManagers(company.id, userIds, [...kept, ...added])
  } else {
    const stored = (await tx.attributions.listGroups(company.id)).filter((item) => userIds.includes(item.user_id))
    const kept = stored.flatMap((item) => cut(item, { ...item, dimension: item.group_dimension }, placements))
    const added = placements.flatMap((placement) => (placement.value === null ? [] : [groupOf(company, placement, placement.value)]))
    await tx.attributions.replaceGroups(company.id, userIds, [...kept, ...added])
  }
  return allApplied(items.length)
}

function readPlacement(
  kind: Kind,
  item: Record<string, unknown>,
  users: Map<string, User>,
  line: number,
): { placement: Placement; problems: [] } | { problems: string[] } {
  const problems: string[] = []
  const user = lookUp(item.user, 'user', users, problems)
  let dimension = ''
  let value: string | null = null
  let manager: User | null = null
  if (kind === 'managers') {
    manager = item.manager === null ? null : lookUp(item.manager, 'manager', users, problems)
    if (manager && user && manager.id === user.id) problems.push('manager: a user cannot be their own manager')
    value = manager?.id ?? null
  } else {
    if (typeof item.group_dimension !== 'string' || item.group_dimension === '')
      problems.push('group_dimension: expected a non-empty string')
    if (typeof item.group !== 'string' || item.group === '') problems.push('group: expected a non-empty string')
    // Only read as text when they are text: String() of an object whose toString is not a function throws.
    dimension = typeof item.group_dimension === 'string' ? item.group_dimension : ''
    value = typeof item.group === 'string' ? item.group : ''
  }
  const start = item.start_date ?? null
  const end = item.end_date ?? null
  if (start !== null && !isMonthString(start)) problems.push(`start_date: expected a month YYYY-MM or null, got ${JSON.stringify(start)}`)
  if (end !== null && !isMonthString(end)) problems.push(`end_date: expected a month YYYY-MM or null, got ${JSON.stringify(end)}`)
  else if (end !== null && isMonthString(start) && end < start) problems.push('end_date: before start_date')
  for (const key of Object.keys(item)) if (!FIELDS[kind].includes(key)) problems.push(`${key}: unknown field`)
  const months = { start_month: start as string | null, end_month: end as string | null }
  if (problems.length === 0 && user && manager) problems.push(...archivedManagerProblems(manager, user, months))
  if (problems.length > 0 || !user) return { problems }
  return {
    placement: { line, userId: user.id, dimension, value, ...months },
    problems: [],
  }
}

/** The archive rule, from the attribution's side: a manager cannot manage someone active in their archive period. */
function archivedManagerProblems(manager: User, user: User, months: MonthRange): string[] {
  const archivedFrom = firstArchivedMonthOf(manager)
  if (archivedFrom === undefined || !managesWhileArchived(months, archivedFrom, lastActiveMonthOf(user))) return []
  return [`manager: ${manager.email} is archived from ${archivedFrom}, in months ${user.email} is active in`]
}

const NO_USER = 'no user with email'

/**
 * An item naming no known user that a users import of the company still waiting creates (in its debounce window,
 * or sent after this call) names that import: the user exists only once it is applied, after this call.
 */
async function nameWaitingUsersImport(tx: Store, companyId: string, invalid: ImportItemIssue[]): Promise<void> {
  if (!invalid.some((issue) => issue.details.includes(NO_USER))) return
  const creates = await usersOfWaitingImports(tx, companyId)
  for (const issue of invalid) {
    const named = [...issue.details.toLowerCase().matchAll(NAMED_EMAIL)].map((match) => match[1])
    const creating = named.map((email) => creates.get(email)).find((found) => found !== undefined)
    if (creating) issue.details += waitFor(creating, 'send attributions')
  }
}

/** The emails of an issue's "no user with email" problems. */
const NAMED_EMAIL = new RegExp(`${NO_USER} (\\S+?)(?:;|$)`, 'g')

function lookUp(email: unknown, field: string, users: Map<string, User>, problems: string[]): User | null {
  if (!isEmail(email)) {
    problems.push(`${field}: expected the email of a user`)
    return null
  }
  const user = users.get(email.toLowerCase())
  if (!user) problems.push(`${field}: ${NO_USER} ${email}`)
  return user ?? null
}

/** Two items of one call that cannot both hold: the same user twice (managers), or overlapping months of one group dimension. */
function clashes(kind: Kind, a: Placement, b: Placement): boolean {
  if (a.userId !== b.userId) return false
  return kind === 'managers' || (a.dimension === b.dimension && monthRangesOverlap(a, b))
}

function clashProblem(kind: Kind, clash: Placement): string {
  if (kind === 'managers') return `user: already given on line ${clash.line}: a call gives each user one manager`
  return `overlaps line ${clash.line}: a user has one group per dimension per month`
}

/** What remains of a stored attribution once the new placements of its user and dimension take their months. */
function cut<T extends MonthRange>(stored: T, held: { user_id: string; dimension: string }, placements: readonly Placement[]): T[] {
  let pieces: MonthRange[] = [{ start_month: stored.start_month, end_month: stored.end_month }]
  for (const placement of placements) {
    if (placement.userId !== held.user_id || placement.dimension !== held.dimension) continue
    pieces = pieces.flatMap((piece) => monthRangeWithout(piece, placement))
  }
  const untouched = pieces.length === 1 && pieces[0].start_month === stored.start_month && pieces[0].end_month === stored.end_month
  if (untouched) return [stored]
  return pieces.map((piece) => ({ ...stored, id: newId(), start_month: piece.start_month, end_month: piece.end_month }))
}

function managerOf(company: Company, placement: Placement, managerId: string): ManagerAttribution {
  const { start_month, end_month } = placement
  return { id: newId(), company_id: company.id, user_id: placement.userId, manager_id: managerId, start_month, end_month }
}

function groupOf(company: Company, placement: Placement, group: string): GroupAttribution {
  const { start_month, end_month } = placement
  return {
    id: newId(),
    company_id: company.id,
    user_id: placement.userId,
    group_dimension: placement.dimension,
    group,
    start_month,
    end_month,
  }
}
