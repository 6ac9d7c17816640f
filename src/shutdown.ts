import closeWithGrace from 'close-with-grace'
import type { Config } from './config.ts'
import type { Running } from './server.ts'

/**
 * The one shutdown path of every role, on SIGTERM or SIGINT (and on an uncaught error): on a signal, first the
 * drain when SHUTDOWN_DRAIN_MS is set (`Running.drain`: the API accepts no new connection, answers on those open
 * and closes each after its answer, until none is left or the time is over); then `server.close()`, in which
 * readiness turns 503, no new connection is accepted, requests in flight finish, the worker hands its import back
 * (or finishes it), and the store closes. The process exits 0 when that is done, or 1 when it takes more than
 * SHUTDOWN_TIMEOUT_MS, on an uncaught error, or on a second signal. Returns what stops handling them.
 */
export function closeGracefullyOnSignals(
  server: Pick<Running, 'log' | 'close' | 'drain'>,
  { shutdownTimeoutMs, shutdownDrainMs }: Pick<Config, 'shutdownTimeoutMs' | 'shutdownDrainMs'>,
): () => void {
  const log = server.log
  const { uninstall } = closeWithGrace(
    {
      delay: shutdownTimeoutMs,
      logger: { error: (message: unknown) => log.error({ message }, 'shutdown') },
      onTimeout: (delay) => log.error({ timeout_ms: delay }, 'shutdown took too long: exiting with requests still in flight'),
      onSecondSignal: (signal) => log.error({ signal }, 'second signal: exiting at once'),
    },
    async ({ signal, err }) => {
      if (err) log.error({ err }, 'uncaught error: shutting down')
      else log.info({ signal: signal ?? 'exit', drain_ms: shutdownDrainMs }, 'shutting down')
      // Only a signal drains: after an uncaught error the process is not trusted to go on answering.
      if (signal && shutdownDrainMs > 0) {
        const { open } = await server.drain(shutdownDrainMs)
        log.info({ open_connections: open }, open === 0 ? 'drained: every connection has ended' : 'drain time over')
      }
      await server.close()
      log.info({}, 'shut down')
    },
  )
  return uninstall
}
