import fastifyRateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { authenticationOf } from '../auth/api-key-hook.ts'
import { portRateLimitStore, rateKey } from './port-store.ts'

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
    keyGenerator: (request) => subjectKey(request, max),
  })
  api.addHook('onRequest', api.rateLimit())
}

/**
 * The subject a request is counted against: its company when the key is valid, else its address. An address
 * over its budget stays refused for the rest of its window even with a valid key: otherwise a guesser would
 * spot the valid key as the one answer that is not a 429.
 */
async function subjectKey(request: FastifyRequest, max: number): Promise<string> {
  const outcome = await authenticationOf(request)
  const address = { address: fastifyRateLimit.normalizeIP(request.ip) }
  if (outcome instanceof Error) return rateKey(address)
  const addressWindow = await request.server.store.rateLimits.peek(address, request.server.clock.now())
  if (addressWindow && addressWindow.hits >= max) return rateKey(address)
  return rateKey({ companyId: outcome.company.id })
}
