import { describe } from 'vitest'
import { adminEditsContract } from './contract/admin-edits.ts'
import { apiKeysContract } from './contract/api-keys.ts'
import { attributionsContract } from './contract/attributions.ts'
import { calculationContract } from './contract/calculation.ts'
import { companiesContract } from './contract/companies.ts'
import { companyTransactionsContract } from './contract/company-transactions.ts'
import { currenciesContract } from './contract/currencies.ts'
import { dataTablesContract } from './contract/data-tables.ts'
import { importStatisticsContract } from './contract/import-statistics.ts'
import { importsContract, sharedImportQueueContract } from './contract/imports.ts'
import { lifecycleContract } from './contract/lifecycle.ts'
import { metricsContract } from './contract/metrics.ts'
import { offsetListsContract } from './contract/offset-lists.ts'
import { pagesContract } from './contract/pages.ts'
import { quotaValuesContract } from './contract/quota-values.ts'
import { quotasContract } from './contract/quotas.ts'
import { rateLimitContract, sharedRateLimitContract } from './contract/rate-limits.ts'
import { recordsContract } from './contract/records.ts'
import { roundTripsContract } from './contract/round-trips.ts'
import { statementExtractionContract } from './contract/statement-extraction.ts'
import { structuresContract } from './contract/structures.ts'
import type { StoreAdapter } from './contract/support.ts'
import { tenantIsolationContract } from './contract/tenant-isolation.ts'
import { testKitContract } from './contract/test-kit.ts'
import { transactionsContract } from './contract/transactions.ts'
import { userAttributesContract } from './contract/user-attributes.ts'
import { usersContract } from './contract/users.ts'

export type { StoreAdapter } from './contract/support.ts'

/**
 * Every suite of the store contract, one per repository (`test/store/contract/`) and a few that span them: what
 * each adapter must pass. An adapter's test file calls `storeContract` once per way it opens a store, so that no
 * adapter can leave a suite out.
 */
const SUITES: ReadonlyArray<(adapter: StoreAdapter) => void> = [
  roundTripsContract,
  companiesContract,
  apiKeysContract,
  usersContract,
  userAttributesContract,
  metricsContract,
  attributionsContract,
  dataTablesContract,
  recordsContract,
  structuresContract,
  quotasContract,
  quotaValuesContract,
  pagesContract,
  offsetListsContract,
  statementExtractionContract,
  currenciesContract,
  calculationContract,
  adminEditsContract,
  importsContract,
  sharedImportQueueContract,
  importStatisticsContract,
  rateLimitContract,
  sharedRateLimitContract,
  testKitContract,
  tenantIsolationContract,
  transactionsContract,
  companyTransactionsContract,
  lifecycleContract,
]

/** Declares every test of the store contract for the stores `adapter` opens. */
export function storeContract(name: string, adapter: StoreAdapter): void {
  describe(`store contract: ${name}`, () => {
    for (const suite of SUITES) suite(adapter)
  })
}
