import fastifyRateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { authenticationOf } from '../auth/api-key-hook.ts'
import { ClientError } from '../errors.ts'
import { rateSubjectKey } from '../store/port.ts'
import { portRateLimitStore } from './port-store.ts'

const WINDOW_MS = 1000

/**
 * Limits the routes of `api` (the v1 and v2 trees) to `config.rateLimitPerSecond` requests per second per
 * company, counted in the store so that every instance shares the budget. A request without a valid key is
 * counted against its client address instead. Register it before the auth hook: the limiter must see the
 * requests that the auth hook refuses, or guessing keys would be unlimited.
 */
export async function limitRequestRate(api: FastifyInstance): Promise<void> {
  const max = api.config.rateLimitPerSecond
  await api.register(fastifyRateLimit, {
    global: false,
    max,
    timeWindow: WINDOW_MS,
    // RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset (and Retry-After on a 429).
    enableDraftSpec: true,
    store: portRateLimitStore(api.store, api.clock),
    keyGenerator: subjectKey,
    // The plugin's own error for a 429, without its stack trace (ClientError says why).
    errorResponseBuilder: (_request, context) =>
      Object.assign(new ClientError(`Rate limit exceeded, retry in ${context.after}`), { statusCode: context.statusCode }),
  })
  api.addHook('onRequest', api.rateLimit())
}

/**
 * The subject a request is counted against: its company when the key is valid, else its address. A valid key
 * is never counted against its address, so that other clients' bad keys from the same address (behind one
 * NAT or proxy) never cost it a request; docs/decisions.md says why that gives a guesser nothing.
 */
async function subjectKey(request: FastifyRequest): Promise<string> {
  const outcome = await authenticationOf(request)
  if (!(outcome instanceof Error)) return rateSubjectKey({ companyId: outcome.company.id })
  // A request whose connection is already gone has no address left to read.
  return rateSubjectKey({ address: fastifyRateLimit.normalizeIP(request.ip ?? '') })
}
