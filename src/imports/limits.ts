/** The limits of the upsert calls. The README and docs/decisions.md give the reasons. */

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
