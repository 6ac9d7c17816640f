import { AjvCompiler } from '@fastify/ajv-compiler'
import type { FastifyServerOptions } from 'fastify'

type ValidatorFactory = NonNullable<
  NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']
>

/**
 * Fastify's validators with the server's Ajv options, but a body's values are never coerced. A query string, a
 * path and headers are text, so "5" is read as the 5 their schema asks for; a JSON body says its own types, and
 * coercing them changes data silently (null or "" to 0 in an admin edit, [7] to 7, true to 1), so a body whose
 * value has the wrong type is refused.
 */
export function validatorsKeepingBodyTypes(): ValidatorFactory {
  const fromPool = AjvCompiler()
  return ((externalSchemas, options) => {
    const forText = fromPool(externalSchemas, options)
    const exact = { ...options, customOptions: { ...options?.customOptions, coerceTypes: false } } as typeof options
    const forBodies = fromPool(externalSchemas, exact)
    return (route: { httpPart?: string }) => {
      if (route.httpPart === 'body') return forBodies(route as never)
      const validate = forText(route as never)
      return numbersAsWritten(validate as unknown as Validate) as unknown as typeof validate
    }
  }) as ValidatorFactory
}

type Validate = ((data: unknown, ...context: unknown[]) => unknown) & { errors?: unknown; schema?: unknown }

/**
 * A text part's validator that takes a number only as decimal digits, and a finite one. Ajv coerces whatever
 * `Number()` reads: `limit=%20` (a space) was read as 0, v1's count-only answer, and `0x10`, `1e3`, `+5` or
 * `5 ` as numbers, where the specification's parameters are integers. And it coerces "1e400" (or 400 nines) to
 * Infinity and skips its numeric keywords for a value that is not finite, so it passed `maximum`: a page limit
 * reached SQLite, and a debounce a Date, as Infinity (a 500).
 */
function numbersAsWritten(validate: Validate): Validate {
  const numeric = numericProperties(validate.schema)
  const checked: Validate = (data, ...context) => {
    const written = numeric.size > 0 ? textsOf(data, numeric) : null
    const valid = validate(data, ...context)
    checked.errors = validate.errors
    if (valid !== true || typeof data !== 'object' || data === null) return valid
    for (const [name, text] of written ?? []) {
      const kind = numeric.get(name)!
      if (!NUMBER_TEXT[kind].test(text))
        return refuse(checked, name, `must be ${kind === 'integer' ? 'an integer' : 'a number'} written in decimal digits`)
    }
    for (const [name, value] of Object.entries(data)) {
      if (isInfinite(value) || (Array.isArray(value) && value.some(isInfinite))) return refuse(checked, name, 'must be a finite number')
    }
    return true
  }
  // Ajv's own properties (schema, schemaEnv...), which Fastify may read, stay on the validator it is given.
  return Object.assign(checked, validate)
}

const NUMBER_TEXT = { integer: /^-?[0-9]+$/, number: /^-?[0-9]+(\.[0-9]+)?$/ }

/** The properties of an object schema that are numbers, by kind. */
function numericProperties(schema: unknown): Map<string, 'integer' | 'number'> {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> } | undefined)?.properties ?? {}
  const numeric = new Map<string, 'integer' | 'number'>()
  for (const [name, property] of Object.entries(properties)) {
    if (property.type === 'integer' || property.type === 'number') numeric.set(name, property.type)
  }
  return numeric
}

/** The numeric properties' values as the request wrote them, before Ajv coerces them in place. */
function textsOf(data: unknown, numeric: Map<string, unknown>): Array<[string, string]> {
  if (typeof data !== 'object' || data === null) return []
  const texts: Array<[string, string]> = []
  for (const name of numeric.keys()) {
    const value = Object.hasOwn(data, name) ? (data as Record<string, unknown>)[name] : undefined
    if (typeof value === 'string') texts.push([name, value])
  }
  return texts
}

function refuse(validate: Validate, name: string, message: string): false {
  validate.errors = [{ instancePath: `/${name}`, keyword: 'type', params: {}, message }]
  return false
}

/** Run on every request's query values: no array made for a value that is not one. */
const isInfinite = (value: unknown) => typeof value === 'number' && !Number.isFinite(value)
