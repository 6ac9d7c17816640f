/** The limits of the upsert calls. docs/v1.md states them, and docs/decisions.md gives the reasons. */

/** Users per `PUT /v1/users/bulk` call (the specification's limit), and attributions per call. */
export const MAX_USERS_PER_CALL = 200
export const MAX_ATTRIBUTIONS_PER_CALL = 200

/**
 * The largest body of the calls whose items are few and small (users, attributions, archives), unless the
 * service-wide limit (`BODY_LIMIT_MB`) is lower: 200 users of 10 KiB each fit. A body near the service-wide limit,
 * which only record calls need, would be read and parsed in full before its item count refused it.
 */
export const SMALL_CALL_BODY_LIMIT_BYTES = 2 * 1024 * 1024

/** The body limit of a small call, given the service-wide one (`BODY_LIMIT_MB`). */
export function smallCallBodyLimit(bodyLimitMb: number): number {
  return Math.min(SMALL_CALL_BODY_LIMIT_BYTES, bodyLimitMb * 1024 * 1024)
}

/**
 * Records per `POST /v1/tables/{key}/records/bulk` call: twice the top of the recommended 1,000 to 5,000. Their
 * bytes are bounded by the service-wide body limit (`BODY_LIMIT_MB`).
 */
export const MAX_RECORDS_PER_CALL = 10_000

/** The longest debounce window: a day. */
export const MAX_DEBOUNCE_SECONDS = 86_400

/**
 * The pace at which a company's import queue is assumed to drain, for the `Retry-After` of a call refused
 * because the queue is full: a conservative reading of the apply rate in docs/performance.md.
 */
export const QUEUE_DRAIN_BYTES_PER_SECOND = 8 * 1024 * 1024
/** The longest `Retry-After` given to a call refused because the queue is full. */
export const MAX_QUEUE_RETRY_AFTER_SECONDS = 60
