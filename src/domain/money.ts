/**
 * Rounds an amount to the cent, halves away from zero. The small nudge keeps a value such as 1.005, stored as
 * 1.00499999…, on the side a person computing by hand would expect; `-0` becomes `0`.
 */
export function roundToCents(value: number): number {
  const cents = Math.round(Math.abs(value) * 100 + 1e-7) / 100
  return value < 0 && cents !== 0 ? -cents : cents
}

/** Sums amounts already rounded to the cent, without the binary noise of adding decimals (0.1 + 0.2). */
export function sumCents(values: readonly number[]): number {
  let cents = 0
  for (const value of values) cents += Math.round(value * 100)
  return cents / 100
}
