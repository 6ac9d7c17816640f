import type { Clock } from '../clock.ts'
import type { RateSubject, Store } from '../store/port.ts'

/** How a limiter key names its subject: `company:<id>` or `address:<ip>`. */
export function rateKey(subject: RateSubject): string {
  return 'companyId' in subject ? `company:${subject.companyId}` : `address:${subject.address}`
}

export function subjectOfKey(key: string): RateSubject {
  if (key.startsWith('company:')) return { companyId: key.slice('company:'.length) }
  if (key.startsWith('address:')) return { address: key.slice('address:'.length) }
  throw new Error(`not a rate-limit key: ${key}`)
}

type Counted = (error: Error | null, result?: { current: number; ttl: number }) => void

/**
 * A store for `@fastify/rate-limit` backed by the store port, so that every instance sharing the store
 * shares the budget, and windows follow the injected clock. The plugin instantiates the class it is given.
 */
export function portRateLimitStore(store: Store, clock: Clock) {
  return class PortRateLimitStore {
    incr(key: string, counted: Counted, timeWindow: number): void {
      const now = clock.now()
      store.rateLimits.hit(subjectOfKey(key), timeWindow, now).then(
        (window) => counted(null, { current: window.hits, ttl: Math.max(0, Date.parse(window.resetsAt) - now.getTime()) }),
        (error: unknown) => counted(error instanceof Error ? error : new Error(String(error))),
      )
    }

    read(key: string, counted: Counted): void {
      const now = clock.now()
      store.rateLimits.peek(subjectOfKey(key), now).then(
        (window) => counted(null, window ? { current: window.hits, ttl: Date.parse(window.resetsAt) - now.getTime() } : { current: 0, ttl: 0 }),
        (error: unknown) => counted(error instanceof Error ? error : new Error(String(error))),
      )
    }

    child(): PortRateLimitStore {
      return new PortRateLimitStore()
    }
  }
}
