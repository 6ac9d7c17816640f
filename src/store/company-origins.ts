import type { ApiKey } from './model.ts'

/**
 * What a company was created from, kept with it so that it can be put back as it was (`src/admin/reset.ts`):
 * the fixture as loaded, and what made its records what they are beyond the fixture (the load's time, its ids,
 * its keys' hashes). Deleted with the company.
 */
export interface CompanyOrigin {
  company_id: string
  /** The fixture document, as it was given. */
  fixture: unknown
  /** The load's time: what a reload stamps again where the fixture gives no time of its own. */
  loaded_at: string
  /** Every id the load made, in the order it made them: a reload makes the same ones in the same order. */
  ids: string[]
  /** The API keys the load created (their hashes, never a secret): a reload stores them again. */
  api_keys: ApiKey[]
}

export interface CompanyOriginRepository {
  /** Stores the company's origin, replacing the one it had, atomically. */
  save(origin: CompanyOrigin): Promise<void>
  /** The company's origin; null for an unknown company, or one created before origins were kept. */
  get(companyId: string): Promise<CompanyOrigin | null>
}
