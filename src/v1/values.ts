import type { Money } from '../store/model.ts'

/** True for a stored amount `{value, currency}`, which v1 shows as a number with `<key>_currency` beside it. */
export function isMoney(value: unknown): value is Money {
  return typeof value === 'object' && value !== null && typeof (value as Money).value === 'number' && 'currency' in value
}
