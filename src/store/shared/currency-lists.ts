/**
 * `[key, currency]` pairs, each key once with each of its currencies, as each key's sorted currencies
 * (`CurrenciesInUse`). A Map rather than an object: the keys are API keys a company chose, and one named
 * `valueOf` or `toString` would find Object.prototype's member in an object.
 */
export function currencyListsByKey(pairs: ReadonlyArray<readonly [string, string]>): Map<string, string[]> {
  const groups = Map.groupBy(pairs, ([key]) => key)
  return new Map([...groups].map(([key, group]) => [key, group.map(([, currency]) => currency).toSorted()]))
}
