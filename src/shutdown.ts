import closeWithGrace from 'close-with-grace'
import type { Running } from './server.ts'

/**
 * The one shutdown path of every role, on SIGTERM or SIGINT (and on an uncaught error): `server.close()`, in which
 * readiness turns 503, no new connection is accepted, requests in flight finish, the worker hands its import back
 * (or finishes it), and the store closes. The process exits 0 when that is done, or 1 when it takes more than
 * `timeoutMs`, on an uncaught error, or on a second signal.
 */
export function closeGracefullyOnSignals(server: Pick<Running, 'log' | 'close'>, timeoutMs: number): void {
  const log = server.log
  closeWithGrace(
    {
      delay: timeoutMs,
      logger: { error: (message: unknown) => log.error({ message }, 'shutdown') },
      onTimeout: (delay) => log.error({ timeout_ms: delay }, 'shutdown took too long: exiting with requests still in flight'),
      onSecondSignal: (signal) => log.error({ signal }, 'second signal: exiting at once'),
    },
    async ({ signal, err }) => {
      if (err) log.error({ err }, 'uncaught error: shutting down')
      else log.info({ signal: signal ?? 'exit' }, 'shutting down')
      await server.close()
      log.info({}, 'shut down')
    },
  )
}
