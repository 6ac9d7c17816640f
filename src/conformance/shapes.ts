/**
 * The shapes of the specification, as predicates that say what is wrong (an empty list: nothing). They read
 * the specification (as docs/interface.md describes it), not this service's schemas: the conformance check must
 * hold any service to the same text.
 */

export type Problems = string[]

const OBJECT_ID = /^[0-9a-fA-F]{24}$/
const DATE = /^\d{4}-\d{2}-\d{2}$/

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
export const isObjectId = (value: unknown): boolean => typeof value === 'string' && OBJECT_ID.test(value)
export const isDate = (value: unknown): boolean => typeof value === 'string' && DATE.test(value) && !Number.isNaN(Date.parse(value))
export const isAmount = (value: unknown): boolean =>
  isObject(value) && typeof value.value === 'number' && typeof value.currency === 'string'
export const isUserReference = (value: unknown): boolean =>
  isObject(value) && typeof value.id === 'string' && (value.email === null || typeof value.email === 'string')

const show = (value: unknown) => JSON.stringify(value)?.slice(0, 120) ?? String(value)

/** Problems of one value against an expectation, named `name` in the message. */
export function expectThat(name: string, value: unknown, holds: (value: unknown) => boolean, what: string): Problems {
  return holds(value) ? [] : [`${name} is ${show(value)}, expected ${what}`]
}

/** 400: `{count: number, errors: [{error, resource, description}]}`, with `resource` when given. */
export function validationBodyProblems(body: unknown, resource?: string): Problems {
  if (!isObject(body)) return [`body ${show(body)} is not {count, errors}`]
  const problems: Problems = []
  if (typeof body.count !== 'number') problems.push(`count is ${show(body.count)}`)
  if (!Array.isArray(body.errors) || body.errors.length === 0) return [...problems, `errors is ${show(body.errors)}`]
  for (const error of body.errors) {
    if (!isObject(error) || !['error', 'resource', 'description'].every((key) => typeof error[key] === 'string')) {
      problems.push(`error item ${show(error)} is not {error, resource, description}`)
    }
  }
  if (resource && !body.errors.some((error) => isObject(error) && error.resource === resource)) {
    problems.push(`no error names resource ${resource}: ${show(body.errors)}`)
  }
  return problems
}

export function unauthorizedBodyProblems(body: unknown): Problems {
  if (!isObject(body) || typeof body.message !== 'string' || body.type !== 'UnauthorizedError')
    return [`body ${show(body)} is not {message, type: "UnauthorizedError"}`]
  return []
}

export function notFoundBodyProblems(body: unknown): Problems {
  if (!isObject(body) || typeof body.message !== 'string' || typeof body.resource !== 'string' || body.type !== 'NotFoundError') {
    return [`body ${show(body)} is not {message, resource, type: "NotFoundError"}`]
  }
  return []
}

/** Page meta: `{next_start_id, has_more, next_url}`, both null on the last page. */
export function pageMetaProblems(meta: unknown): Problems {
  if (!isObject(meta)) return [`meta is ${show(meta)}`]
  if (typeof meta.has_more !== 'boolean') return [`meta.has_more is ${show(meta.has_more)}`]
  if (!meta.has_more)
    return meta.next_start_id === null && meta.next_url === null ? [] : [`last page's meta is ${show(meta)}, expected nulls`]
  return isObjectId(meta.next_start_id) && typeof meta.next_url === 'string'
    ? []
    : [`meta is ${show(meta)}: has_more without next_start_id and next_url`]
}

const FIELD_TYPES = ['string', 'number', 'object', 'date']
/** The formats the specification lists by type; another one is reported, not failed (the list explains formats). */
export const LISTED_FORMATS: Record<string, Array<string | null>> = {
  string: ['enum', 'period', null],
  number: ['percentage', 'float', null],
  object: ['currency', null],
  date: ['date', null],
}
const ORIGINS: Record<string, string> = { standard: 'standard', custom: 'custom', datatable: 'datatable' }
const FREQUENCIES = ['monthly', 'quarterly', 'semesterly', 'annually']

/** A field descriptor of the fields endpoint. */
export function fieldProblems(field: unknown): Problems {
  if (!isObject(field)) return [`field ${show(field)} is not an object`]
  const name = typeof field.api_key === 'string' ? field.api_key : show(field.api_key)
  const problems: Problems = []
  const prefix = typeof field.api_key === 'string' ? field.api_key.split('.')[0] : ''
  if (!ORIGINS[prefix]) problems.push(`${name}: api_key without a standard., custom. or datatable. prefix`)
  else if (field.origin !== ORIGINS[prefix]) problems.push(`${name}: origin ${show(field.origin)} does not match its prefix`)
  if (typeof field.name !== 'string') problems.push(`${name}: name is ${show(field.name)}`)
  if (!FIELD_TYPES.includes(field.type as string)) problems.push(`${name}: type ${show(field.type)}`)
  if (field.format !== null && typeof field.format !== 'string') problems.push(`${name}: format ${show(field.format)}`)
  if (typeof field.created_at !== 'string' || Number.isNaN(Date.parse(field.created_at)))
    problems.push(`${name}: created_at ${show(field.created_at)}`)
  for (const list of ['currencies', 'enum_values'] as const) {
    if (field[list] !== null && !Array.isArray(field[list])) problems.push(`${name}: ${list} ${show(field[list])}`)
  }
  if (field.properties !== null && !isObject(field.properties)) problems.push(`${name}: properties ${show(field.properties)}`)
  if ('frequency' in field) {
    if (field.api_key !== 'standard.period') problems.push(`${name}: frequency on a field other than standard.period`)
    else if (!FREQUENCIES.includes(field.frequency as string)) problems.push(`${name}: frequency ${show(field.frequency)}`)
  }
  return problems
}

/** A value against the descriptor of its field: null is accepted (a value may be unset). */
export function valueMatchesField(value: unknown, field: { type: string; format: string | null }): boolean {
  if (value === null) return true
  switch (field.type) {
    case 'number':
      return typeof value === 'number'
    case 'string':
      return typeof value === 'string'
    case 'date':
      return typeof value === 'string' && !Number.isNaN(Date.parse(value))
    case 'object':
      return field.format === 'currency' ? isAmount(value) : isObject(value)
    default:
      return true
  }
}

const PERIOD_FORMATS: Record<string, RegExp> = {
  monthly: /^\d{4}-(0[1-9]|1[0-2])$/,
  quarterly: /^\d{4}-Q[1-4]$/,
  semesterly: /^\d{4}-S[12]$/,
  annually: /^\d{4}$/,
}

export const periodMatches = (period: unknown, frequency: string | undefined): boolean =>
  typeof period === 'string' &&
  (frequency ? (PERIOD_FORMATS[frequency]?.test(period) ?? false) : Object.values(PERIOD_FORMATS).some((format) => format.test(period)))
