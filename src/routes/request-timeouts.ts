/**
 * Fastify's options that cut off a request sent slowly (408), so that slow clients cannot hold connections (and a
 * company's upsert turn) without end. Node checks at an interval: a quarter of the timeout, at most its default
 * 30 s. Node enforces a request's timeout only when the headers' own (60 s by default) is not longer.
 */
export function requestTimeouts(requestTimeoutMs: number) {
  return {
    requestTimeout: requestTimeoutMs,
    http: {
      connectionsCheckingInterval: Math.min(30_000, Math.ceil(requestTimeoutMs / 4)),
      headersTimeout: Math.min(60_000, requestTimeoutMs),
    },
  }
}
