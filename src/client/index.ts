/**
 * `commission-api/client`: a typed client of the commission interface (v1 and v2) for any base URL.
 *
 * ```ts
 * import { CommissionClient } from 'commission-api/client'
 * const client = new CommissionClient({ baseUrl: 'http://127.0.0.1:3000', apiKey: process.env.KEY! })
 * for await (const row of client.statements(tableId)) console.log(row['standard.total_commission'])
 * ```
 */
export { CommissionClient, DEFAULT_CLOCK_SKEW_MS, followedNextUrl, instantParam, rowsPathOf } from './client.ts'
export type { Changes, ClientOptions, StructureRef, WaitOptions } from './client.ts'
export {
  ApiError,
  ConnectionError,
  ForbiddenApiError,
  ImportTimeoutError,
  NotFoundApiError,
  RateLimitedError,
  UnauthorizedApiError,
  UnexpectedAnswerError,
  ValidationApiError,
} from './errors.ts'
export type { ApiErrorDetails } from './errors.ts'
export { Transport } from './transport.ts'
export type { ApiRequest, ApiResponse, Method, RateLimitOptions, RetryOptions, TransportOptions } from './transport.ts'
export type * from './types.ts'
