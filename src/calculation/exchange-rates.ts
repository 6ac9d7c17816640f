import { isCurrencyCode } from '../domain/formats.ts'
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

/**
 * What is wrong with a company's rates, each problem with the currency it is about (null when the code itself
 * is not one). The fixture and the admin route take rates by the same rules: codes as ISO 4217 writes them, a
 * positive finite rate, and the default currency, worth 1 of itself, given no other rate.
 */
export function exchangeRateProblems(rates: ExchangeRates, defaultCurrency: string): { currency: string; description: string }[] {
  const problems: { currency: string; description: string }[] = []
  for (const [currency, rate] of Object.entries(rates)) {
    if (!isCurrencyCode(currency)) problems.push({ currency, description: `${currency} is not a currency code such as USD` })
    else if (!(typeof rate === 'number' && Number.isFinite(rate) && rate > 0))
      problems.push({ currency, description: 'a rate is a positive number' })
    else if (currency === defaultCurrency && rate !== 1)
      problems.push({ currency, description: `${currency} is the default currency: its rate is 1` })
  }
  return problems
}
