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
      return finiteOnly(validate as unknown as Validate) as unknown as typeof validate
    }
  }) as ValidatorFactory
}

type Validate = ((data: unknown, ...context: unknown[]) => unknown) & { errors?: unknown }

/**
 * A text part's validator that also refuses a number read as Infinity. Ajv coerces "1e400" (or 400 nines) to
 * Infinity and skips its numeric keywords for a value that is not finite, so it passed `maximum`: a page limit
 * reached SQLite, and a debounce a Date, as Infinity (a 500).
 */
function finiteOnly(validate: Validate): Validate {
  const checked: Validate = (data, ...context) => {
    const valid = validate(data, ...context)
    checked.errors = validate.errors
    if (valid !== true || typeof data !== 'object' || data === null) return valid
    for (const [name, value] of Object.entries(data)) {
      if (isInfinite(value) || (Array.isArray(value) && value.some(isInfinite))) {
        checked.errors = [{ instancePath: `/${name}`, keyword: 'type', params: {}, message: 'must be a finite number' }]
        return false
      }
    }
    return true
  }
  // Ajv's own properties (schema, schemaEnv...), which Fastify may read, stay on the validator it is given.
  return Object.assign(checked, validate)
}

/** Run on every request's query values: no array made for a value that is not one. */
const isInfinite = (value: unknown) => typeof value === 'number' && !Number.isFinite(value)
