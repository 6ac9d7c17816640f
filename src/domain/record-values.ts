import type { DataTable, DataTableField, Money } from '../store/model.ts'
import { isCurrencyCode, isDateString, parseInstant } from './formats.ts'
import { amountKeyOf, currencyKey } from './money.ts'

/**
 * Reads a data-table record in its v1 form (keys are the table's field API keys; an amount field `f` has
 * `f_currency` beside it; a multi-valued field is one string with values separated by `;`) into stored
 * values: amounts as `{value, currency}`, multi-valued fields as string arrays, date-times as ISO UTC.
 */
export interface ParsedRecord {
  /** The id-field value, as text. */
  externalId: string | null
  values: Record<string, unknown>
  /** `deleted: true` asks for the record to be removed. */
  deleted: boolean
  /** One line per problem, `field: what is wrong`. Empty when the record can be applied. */
  problems: string[]
  /**
   * Keys the table does not know (not a field, not the `_currency` of an amount field, not `deleted`), left out of
   * `values`: the real service ignores them, so a caller decides whether they are a problem.
   */
  unknownKeys: string[]
}

/**
 * The most characters a text value holds: a string field's, or a multi-valued field's values together. A record
 * is stored as one document (its lines each copy its values): without a bound, one record of a body within the
 * request limit could outgrow what MongoDB stores in a document (16 MiB), a multi-valued field most of all (each
 * value costs about 15 bytes of BSON), and its import would fail with every call it joined. 100,000 characters
 * is far above any CRM's long-text field.
 */
export const MAX_TEXT_CHARS = 100_000

const TOO_LONG = `longer than ${MAX_TEXT_CHARS.toLocaleString('en')} characters, the most a text value holds`

/**
 * The most characters of text a record holds, its values together (`textLength`): a table may have any number of
 * fields, so a bound on each value alone does not bound a record. At most 3 bytes a character in UTF-8, or 15
 * bytes a value of a multi-valued field in BSON, a record stays under 8 MB, and so does each of its lines.
 */
export const MAX_RECORD_TEXT_CHARS = 1_000_000

export const RECORD_TOO_LONG = `the record would hold more than ${MAX_RECORD_TEXT_CHARS.toLocaleString('en')} characters of text, the most a record holds`

/** The characters of text a record's values hold: its strings, and its multi-valued fields' values in their text form (`a;b`). */
export function textLength(values: Record<string, unknown>): number {
  let length = 0
  for (const value of Object.values(values)) length += textLengthOf(value)
  return length
}

/** The characters of text one stored value holds (`textLength`). */
function textLengthOf(value: unknown): number {
  if (typeof value === 'string') return value.length
  return Array.isArray(value) ? multiTextLength(value) : 0
}

/** The length of a multi-valued field's values as text: each value, and a separator between each two. */
function multiTextLength(values: readonly unknown[]): number {
  return values.reduce<number>((length, item) => length + (typeof item === 'string' ? item.length : 0), Math.max(0, values.length - 1))
}

/** A record's `deleted` as sent: a boolean, or its text (`"true"`, `"false"`); null for anything else. */
export function deletionOf(raw: unknown): boolean | null {
  if (typeof raw === 'boolean') return raw
  return raw === 'true' || raw === 'false' ? raw === 'true' : null
}

/** Each table's fields by API key, built once per table object rather than once per record. */
const fieldMaps = new WeakMap<DataTable, Map<string, DataTableField>>()

function fieldsOf(table: DataTable): Map<string, DataTableField> {
  let fields = fieldMaps.get(table)
  if (!fields) {
    fields = new Map(table.fields.map((field) => [field.api_key, field]))
    fieldMaps.set(table, fields)
  }
  return fields
}

export function parseRecord(table: DataTable, input: Record<string, unknown>): ParsedRecord {
  const fields = fieldsOf(table)
  const values: Record<string, unknown> = {}
  const problems: string[] = []
  const unknownKeys: string[] = []
  let deleted = false
  let textChars = 0

  for (const [key, raw] of Object.entries(input)) {
    if (key === 'deleted') {
      const deletion = deletionOf(raw)
      if (deletion === null) problems.push('deleted: expected a boolean')
      else deleted = deletion
      continue
    }
    const field = fields.get(key)
    if (field) {
      const parsed = parseValue(field, raw, input[currencyKey(key)])
      if ('problem' in parsed) problems.push(`${key}: ${parsed.problem}`)
      else {
        values[key] = parsed.value
        // Counted as the values are read: a second pass over them costs every record of an import.
        textChars += textLengthOf(parsed.value)
      }
      continue
    }
    const amountKey = amountKeyOf(key)
    const ofAmount = amountKey !== null && fields.get(amountKey)?.type === 'amount'
    // An amount's currency is read with its amount: sent alone, it changes nothing, and is named as ignored.
    if (!ofAmount || !Object.hasOwn(input, amountKey)) unknownKeys.push(key)
  }

  if (problems.length === 0 && textChars > MAX_RECORD_TEXT_CHARS) problems.push(RECORD_TOO_LONG)
  const rawId = input[table.id_field]
  const externalId = typeof rawId === 'string' || typeof rawId === 'number' ? String(rawId).trim() : null
  if (!externalId) problems.unshift(`${table.id_field}: the id field is required`)
  // The record is matched by its trimmed id: it is stored so too, so that it reads back as it is matched.
  else if (typeof values[table.id_field] === 'string') values[table.id_field] = externalId
  return { externalId: externalId || null, values, deleted, problems, unknownKeys }
}

type Parsed = { value: unknown } | { problem: string }

/** One value of a field, as sent, in its stored form (an amount's with `currency`), or what keeps it from being one. */
export function parseValue(field: DataTableField, raw: unknown, currency: unknown): Parsed {
  if (raw === null || raw === undefined) return { value: null }
  switch (field.type) {
    case 'string': {
      if (typeof raw !== 'string' && typeof raw !== 'number') return { problem: 'expected a string' }
      const text = String(raw)
      return text.length > MAX_TEXT_CHARS ? { problem: TOO_LONG } : { value: text }
    }
    case 'number': {
      const number = toNumber(raw)
      return number === null ? { problem: `expected a number, got ${JSON.stringify(raw)}` } : { value: number }
    }
    case 'amount': {
      const number = toNumber(raw)
      if (number === null) return { problem: `expected a number, got ${JSON.stringify(raw)}` }
      if (!isCurrencyCode(currency)) return { problem: `expected ${currencyKey(field.api_key)}, a currency code such as EUR` }
      const amount: Money = { value: number, currency }
      return { value: amount }
    }
    case 'date':
      return isDateString(raw) ? { value: raw } : { problem: `expected a date YYYY-MM-DD, got ${JSON.stringify(raw)}` }
    case 'datetime': {
      const instant = parseInstant(raw)
      return instant ? { value: instant.toISOString() } : { problem: `expected an ISO 8601 date-time, got ${JSON.stringify(raw)}` }
    }
    case 'boolean':
      if (typeof raw === 'boolean') return { value: raw }
      if (raw === 'true' || raw === 'false') return { value: raw === 'true' }
      return { problem: `expected a boolean, got ${JSON.stringify(raw)}` }
    case 'multi':
      if (typeof raw === 'string') return raw.length > MAX_TEXT_CHARS ? { problem: TOO_LONG } : { value: splitMulti(raw) }
      if (Array.isArray(raw) && raw.every((item) => typeof item === 'string')) {
        if (multiTextLength(raw) > MAX_TEXT_CHARS) return { problem: TOO_LONG }
        // Read back, the values are one text separated by ;: a value holding one would come back as two.
        if (raw.some((item) => item.includes(MULTI_SEPARATOR)))
          return { problem: `a value cannot hold ${MULTI_SEPARATOR}, which separates them` }
        return { value: splitMulti(raw.join(MULTI_SEPARATOR)) }
      }
      return { problem: 'expected values separated by ;' }
  }
}

function toNumber(raw: unknown): number | null {
  if (typeof raw === 'number') return Number.isFinite(raw) ? raw : null
  if (typeof raw === 'string' && DECIMAL_TEXT.test(raw) && Number.isFinite(Number(raw))) return Number(raw)
  return null
}

/** A number written in decimal, as JSON writes one (a sign, a fraction, an exponent); not `0x1F` nor `0b101`, which Number reads. */
const DECIMAL_TEXT = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/

/** What separates the values of a multi-valued field in its text form, the one the v1 upsert takes. */
const MULTI_SEPARATOR = ';'

/** "a; b;;c" → ["a", "b", "c"] */
export function splitMulti(raw: string): string[] {
  return raw
    .split(MULTI_SEPARATOR)
    .map((part) => part.trim())
    .filter((part) => part !== '')
}

/** ["a", "b"] → "a;b": a fetched record can be sent back as it is. */
export function joinMulti(values: readonly unknown[]): string {
  return values.join(MULTI_SEPARATOR)
}
