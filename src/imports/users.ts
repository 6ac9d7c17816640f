import { isCurrencyCode, isDateString, isEmail } from '../domain/formats.ts'
import { amountKeyOf, currencyKey } from '../domain/money.ts'
import { AscendingIds } from '../ids.ts'
import type { Company, ImportItemIssue, User, UserAttributeType } from '../store/model.ts'
import type { CalculationChangeLog } from '../calculation/recalculation.ts'
import type { Store } from '../store/port.ts'
import { allSkipped, isObject, type PayloadOutcome, partial, refused } from './outcome.ts'

/** A check of one value: null when it is acceptable, else what is wrong. Null always empties a field. */
type Check = (value: unknown) => string | null

const text: Check = (value) => (typeof value === 'string' ? null : 'expected a string')
const currency: Check = (value) => (isCurrencyCode(value) ? null : `expected a currency code such as EUR, got ${JSON.stringify(value)}`)
const date: Check = (value) => (isDateString(value) ? null : `expected a date YYYY-MM-DD, got ${JSON.stringify(value)}`)
const boolean: Check = (value) => (typeof value === 'boolean' ? null : `expected true or false, got ${JSON.stringify(value)}`)
const number: Check = (value) =>
  typeof value === 'number' && Number.isFinite(value) ? null : `expected a number, got ${JSON.stringify(value)}`

/** The standard fields of a user payload besides `email`, and the format of each. */
const STANDARD_FIELDS: Readonly<Record<string, Check>> = {
  name: text,
  role: text,
  currency,
  calculation_currency: currency,
  country: text,
  code: text,
  arrival_date: date,
  junior: boolean,
}

/** Every standard field of a user payload: a custom attribute under one of these keys could never be written. */
export const USER_PAYLOAD_FIELDS: readonly string[] = ['email', ...Object.keys(STANDARD_FIELDS)]

const ATTRIBUTE_CHECKS: Record<UserAttributeType, Check> = { string: text, number, amount: number, date, boolean }

/**
 * Applies one `PUT /v1/users/bulk` call. Every item is checked first: one invalid item refuses the whole call
 * (nothing written). A repeated email, and an archived user (read-only through the interface), are skipped
 * alone and reported; the other users are created or updated.
 */
export async function applyUsers(
  tx: Store,
  company: Company,
  items: readonly unknown[],
  now: string,
  changes: CalculationChangeLog,
): Promise<PayloadOutcome> {
  const attributeTypes = new Map((await tx.userAttributes.list(company.id)).map((definition) => [definition.api_key, definition.type]))
  const invalid: ImportItemIssue[] = []
  const skipped: ImportItemIssue[] = []
  const accepted: { issue: Omit<ImportItemIssue, 'details'>; item: Record<string, unknown>; email: string }[] = []
  const seen = new Set<string>()

  items.forEach((item, index) => {
    const line_number = index + 1
    if (!isObject(item)) return void invalid.push({ line_number, row: item, details: 'expected a user object' })
    const email = item.email
    if (isEmail(email) && seen.has(email.toLowerCase())) {
      return void skipped.push({ line_number, row: item, details: `email: duplicated (${email})` })
    }
    const problems = userProblems(item, attributeTypes)
    // Seen even when refused: the call's refusal then names a later repeat too, which the fixed call would skip.
    if (isEmail(email)) seen.add(email.toLowerCase())
    if (problems.length > 0) return void invalid.push({ line_number, row: item, details: problems.join('; ') })
    accepted.push({ issue: { line_number, row: item }, item, email: email as string })
  })

  // The amounts are checked against the stored users also when an item is invalid already: a refusal lists
  // every invalid item, so that the client fixes them all at once.
  const stored = await tx.users.findByEmails(
    company.id,
    accepted.map((entry) => entry.email),
  )
  const changed: User[] = []
  const ids = new AscendingIds(await tx.users.lastId(company.id))
  for (const { issue, item, email } of accepted) {
    const existing = stored.get(email.toLowerCase()) ?? null
    if (existing?.status === 'archived') {
      skipped.push({ ...issue, details: `email: archived user, cannot be changed (${email})` })
      continue
    }
    const user = mergeUser(existing, item, company, now, ids)
    const problems = amountProblems(user, item, attributeTypes)
    if (problems.length > 0) invalid.push({ ...issue, details: problems.join('; ') })
    changed.push(user)
  }
  if (invalid.length > 0) return refused('user', invalid.toSorted(byLine), skipped.toSorted(byLine))
  if (changed.length === 0 && skipped.length > 0) return allSkipped('user', skipped.toSorted(byLine))

  await tx.users.save(company.id, changed)
  for (const user of changed) {
    const before = stored.get(user.email.toLowerCase())
    if (!before || before.currency !== user.currency) changes.userChanged(user.id)
  }
  return partial('user', items.length, skipped.toSorted(byLine))
}

const byLine = (a: ImportItemIssue, b: ImportItemIssue) => a.line_number - b.line_number

/** What is wrong with one item on its own, field by field. */
function userProblems(item: Record<string, unknown>, attributeTypes: Map<string, UserAttributeType>): string[] {
  const problems: string[] = []
  if (!isEmail(item.email)) problems.push(item.email === undefined ? 'email: required' : 'email: expected an email address')
  for (const [key, value] of Object.entries(item)) {
    if (key === 'email' || value === null) continue
    const check = Object.hasOwn(STANDARD_FIELDS, key) ? STANDARD_FIELDS[key] : attributeCheck(key, attributeTypes)
    const problem = check ? check(value) : 'unknown field: not a standard field nor a user attribute of the company'
    if (problem) problems.push(`${key}: ${problem}`)
  }
  return problems
}

function attributeCheck(key: string, attributeTypes: Map<string, UserAttributeType>): Check | null {
  const type = attributeTypes.get(key)
  if (type) return ATTRIBUTE_CHECKS[type]
  const amountKey = amountKeyOf(key)
  return amountKey && attributeTypes.get(amountKey) === 'amount' ? currency : null
}

/** An amount attribute the item sets needs a currency, sent beside it or already stored. */
function amountProblems(user: User, item: Record<string, unknown>, attributeTypes: Map<string, UserAttributeType>): string[] {
  const problems: string[] = []
  for (const [key, type] of attributeTypes) {
    if (type !== 'amount' || !(Object.hasOwn(item, key) || Object.hasOwn(item, currencyKey(key)))) continue
    const value = user.attributes[key]
    const amountCurrency = user.attributes[currencyKey(key)]
    if (typeof value === 'number' && (amountCurrency === null || amountCurrency === undefined)) {
      problems.push(`${currencyKey(key)}: required with a value of ${key}`)
    }
  }
  return problems
}

/**
 * The user after the item: the fields it carries replace the stored ones, null empties one, the others stay. A new
 * user takes the next of the company's ascending ids.
 */
function mergeUser(existing: User | null, item: Record<string, unknown>, company: Company, now: string, ids: AscendingIds): User {
  const user: User = existing
    ? { ...existing, attributes: { ...existing.attributes } }
    : {
        id: ids.next(),
        company_id: company.id,
        email: item.email as string,
        name: null,
        status: 'active',
        role: null,
        currency: company.default_currency,
        calculation_currency: null,
        country: null,
        code: null,
        arrival_date: null,
        junior: null,
        archived_until: null,
        attributes: {},
        created_at: now,
        modified_at: now,
      }
  const standard = user as unknown as Record<string, unknown>
  for (const [key, value] of Object.entries(item)) {
    if (key === 'email') continue
    if (Object.hasOwn(STANDARD_FIELDS, key)) standard[key] = value
    else user.attributes[key] = value
  }
  if (!existing && !Object.hasOwn(item, 'calculation_currency')) user.calculation_currency = user.currency
  user.modified_at = now
  return user
}
