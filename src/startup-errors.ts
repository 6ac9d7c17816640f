import type { Config } from './config.ts'
import { StoreOpenError } from './store/store-open-error.ts'
import { storeDescription } from './store/open-store.ts'

/** An error of Node's; `setting` is the variable of the listener that failed, where it is not PORT (server.ts). */
type SystemError = Error & { code?: string; syscall?: string; path?: string; port?: number; setting?: string }

/**
 * What stopped the process from starting, as one line that names the cause and the setting behind it, for the
 * causes an operator can fix: the port, the host, DATA_DIR, the SQLite file, MongoDB. Null for anything else.
 */
export function startupFailure(error: unknown, config: Config): string | null {
  if (error instanceof StoreOpenError) return error.message
  if (!(error instanceof Error)) return null
  const { code, syscall, port, setting = 'PORT' } = error as SystemError
  const address = `${config.host}:${port ?? (setting === 'WORKER_HEALTH_PORT' ? config.workerHealthPort : config.port)}`
  if (syscall === 'listen' || syscall === 'getaddrinfo' || code === 'EADDRINUSE') {
    if (code === 'EADDRINUSE')
      return `cannot listen on ${address}: the port is in use (another process holds it; set ${setting} to another port)`
    if (code === 'EADDRNOTAVAIL') return `cannot listen on ${address}: HOST=${config.host} is not an address of this machine`
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME')
      return `cannot listen on ${address}: HOST=${config.host} does not resolve to an address`
    // Linux's answer for a link-local IPv6 address given without its interface.
    if (code === 'EINVAL')
      return `cannot listen on ${address}: HOST=${config.host} is not an address to listen on (a link-local IPv6 one needs its interface, as in fe80::1%eth0)`
    if (code === 'EACCES') return `cannot listen on ${address}: not allowed (ports below 1024 need privileges; set ${setting})`
  }
  if (syscall === 'mkdir' || syscall === 'open' || syscall === 'access') {
    const reason =
      code === 'EEXIST' || code === 'ENOTDIR'
        ? 'a file stands where the directory should be'
        : code === 'ENOENT'
          ? 'a directory cannot be made there'
          : code === 'ENAMETOOLONG'
            ? 'its path is too long for the file system'
            : 'it is not writable'
    return `cannot use DATA_DIR=${config.dataDir}: ${reason}`
  }
  if (error.name === 'MongoServerSelectionError' || error.name === 'MongoNetworkError' || error.name === 'MongoNetworkTimeoutError') {
    return `cannot reach ${storeDescription(config)} (MONGODB_URL): ${error.message}`
  }
  // The driver reads some mistakes of the URL (a port out of range) only when it connects: a runtime error then.
  if (error.name === 'MongoParseError' || error.name === 'MongoAPIError' || error.name === 'MongoRuntimeError')
    return `MONGODB_URL is not usable: ${error.message}`
  return null
}
