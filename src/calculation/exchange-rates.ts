import type { ExchangeRates } from '../store/model.ts'

/**
 * Converts through the company's default currency: `rates[c]` is what one unit of `c` is worth in it. A currency
 * without a rate cannot be converted: the caller reports it, never counts it as zero.
 */
export function convert(
  value: number,
  from: string,
  to: string,
  rates: ExchangeRates,
  defaultCurrency: string,
): { value: number } | { missing: string } {
  if (from === to) return { value }
  const fromRate = rateOf(from, rates, defaultCurrency)
  if (fromRate === null) return { missing: from }
  const toRate = rateOf(to, rates, defaultCurrency)
  if (toRate === null) return { missing: to }
  return { value: (value * fromRate) / toRate }
}

function rateOf(currency: string, rates: ExchangeRates, defaultCurrency: string): number | null {
  if (currency === defaultCurrency) return 1
  const rate = rates[currency]
  return typeof rate === 'number' && rate > 0 ? rate : null
}
