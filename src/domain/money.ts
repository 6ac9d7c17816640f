import type { Money } from '../store/model.ts'

/** Rounds an amount to the cent, halves away from zero, as a person computing by hand (`roundDecimal`). */
export const roundToCents = (value: number): number => roundDecimal(value, 2)

/**
 * Rounds to `decimals` places, halves away from zero; `-0` becomes `0`, and a value too large to scale is kept. A
 * decimal such as 1.005 is stored as the binary number nearest to it, 1.00499999999999989…, and times 100 comes out
 * under the half: a fraction within 4.5 × 10⁻¹⁶ of the scaled value under the half (two units of the last place,
 * more than that error can be) counts as the half, as a person computing by hand expects. That margin is capped at
 * an eighth: past about 10¹⁴ scaled, where no decimal of 15 significant digits has a half to round any more, a
 * whole number's own error would pass for a half. Cents are exact so up to about 2.25 × 10¹³; past it, the binary
 * number holds no exact cents.
 */
export function roundDecimal(value: number, decimals: number): number {
  const factor = 10 ** decimals
  const scaled = Math.abs(value) * factor
  if (!Number.isFinite(scaled)) return value
  const whole = Math.floor(scaled)
  const halfReached = scaled - whole >= 0.5 - Math.min(scaled * 4.5e-16, 0.125)
  const rounded = (halfReached ? whole + 1 : whole) / factor
  return value < 0 && rounded !== 0 ? -rounded : rounded
}

/** The sum of amounts already rounded to the cent, as a whole number of cents: exact, whatever the order. */
export function centsOf(values: readonly number[]): number {
  let cents = 0
  for (const value of values) cents += Math.round(value * 100)
  return cents
}

/** A stored amount: a number with its currency. */
export function isMoney(value: unknown): value is Money {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Money).value === 'number' &&
    typeof (value as Money).currency === 'string'
  )
}

/**
 * A stored value read as an amount. An amount without a currency of its own, or a bare number (stored before its
 * metric became an amount), takes `currency`, the row's; with no such currency, or for any other value, null.
 */
export function moneyOf(raw: unknown, currency: string | null): Money | null {
  if (isMoney(raw)) return { value: raw.value, currency: raw.currency }
  const value = numberOf(raw)
  return value === null || currency === null ? null : { value, currency }
}

/** A stored value read as a number: a number as it is, an amount as its value (with or without its currency). */
export function numberOf(raw: unknown): number | null {
  if (typeof raw === 'number') return raw
  return typeof raw === 'object' && raw !== null && typeof (raw as Money).value === 'number' ? (raw as Money).value : null
}

/**
 * v1's flat form of an amount: its number under `key`, its currency under `<key>_currency` (records, user
 * attributes, reporting metrics). v2 shows the amount as one `{value, currency}` object.
 */
export const currencyKey = (key: string): string => `${key}_currency`

/** The key whose currency a key of v1's flat form holds (`amount_currency` → `amount`); null for any other key. */
export function amountKeyOf(key: string): string | null {
  return key.endsWith('_currency') ? key.slice(0, -'_currency'.length) : null
}

/** A value in v1's flat form: an amount as its number and its currency; anything else as it is, with a null currency. */
export function flatAmount(key: string, value: unknown): [string, unknown][] {
  return isMoney(value)
    ? [
        [key, value.value],
        [currencyKey(key), value.currency],
      ]
    : [
        [key, value ?? null],
        [currencyKey(key), null],
      ]
}
