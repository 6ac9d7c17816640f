/** The limits of the upsert calls. docs/v1.md states them, and docs/decisions.md gives the reasons. */

/** Users per `PUT /v1/users/bulk` call (the specification's limit), and attributions per call. */
export const MAX_USERS_PER_CALL = 200
export const MAX_ATTRIBUTIONS_PER_CALL = 200

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
