import type { Clock } from '../clock.ts'
import type { Store } from '../store/port.ts'
import { BatchedRateCounts } from './batched-counts.ts'

type Counted = (error: Error | null, result?: { current: number; ttl: number }) => void

/**
 * A store for `@fastify/rate-limit` backed by the store port, so that every instance sharing the store
 * shares the budget, and windows follow the injected clock. Requests are counted in this process and written
 * in batches (`BatchedRateCounts`). The plugin instantiates the class it is given.
 */
export function portRateLimitStore(store: Store, clock: Clock) {
  const counts = new BatchedRateCounts((key, windowMs, now, count) => store.rateLimits.hit(key, windowMs, now, count))
  return class PortRateLimitStore {
    incr(key: string, counted: Counted, timeWindow: number, max: number): void {
      counts.count(key, timeWindow, max, clock.now()).then(
        (result) => counted(null, result),
        (error: unknown) => counted(error instanceof Error ? error : new Error(String(error))),
      )
    }

    read(key: string, counted: Counted): void {
      const now = clock.now()
      const known = counts.known(key, now)
      if (known) {
        counted(null, known)
        return
      }
      store.rateLimits.peek(key, now).then(
        (window) =>
          counted(null, window ? { current: window.hits, ttl: Date.parse(window.resetsAt) - now.getTime() } : { current: 0, ttl: 0 }),
        (error: unknown) => counted(error instanceof Error ? error : new Error(String(error))),
      )
    }

    child(): PortRateLimitStore {
      return new PortRateLimitStore()
    }
  }
}
