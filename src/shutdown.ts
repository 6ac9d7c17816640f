import closeWithGrace from 'close-with-grace'
import type { RunningServer } from './server.ts'

/**
 * Shuts the server down gracefully on SIGTERM or SIGINT (and on an uncaught error): readiness turns 503,
 * no new connection is accepted, requests in flight finish, the worker finishes or hands back its import,
 * and the store closes (all in `server.close()`). The process exits 0 when that is done, or 1 when it takes
 * more than `timeoutMs`, on an uncaught error, or on a second signal.
 */
export function closeGracefullyOnSignals(server: Pick<RunningServer, 'app' | 'close'>, timeoutMs: number): void {
  const log = server.app.log
  closeWithGrace(
    {
      delay: timeoutMs,
      logger: { error: (message: unknown) => log.error(message) },
      onTimeout: (delay) => log.error({ timeout_ms: delay }, 'shutdown took too long: exiting with requests still in flight'),
      onSecondSignal: (signal) => log.error({ signal }, 'second signal: exiting at once'),
    },
    async ({ signal, err }) => {
      if (err) log.error({ err }, 'uncaught error: shutting down')
      else log.info({ signal: signal ?? 'exit' }, 'shutting down')
      await server.close()
      log.info('shut down')
    },
  )
}
