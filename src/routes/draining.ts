import type { IncomingMessage, ServerResponse } from 'node:http'
import { Server, type Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'

/** The instances (the API, a worker's health port) that are stopping (draining with SHUTDOWN_DRAIN_MS, or closing), and since when. */
const stopping = new WeakMap<FastifyInstance, number>()

/** How often a stopping instance looks whether its connections have ended, and closes those left idle. */
const SWEEP_MS = 50

/**
 * How long into its stop an instance waits before it closes a connection that has sent nothing: bytes a client sent
 * before the stop began may not have been read yet when it begins.
 */
const SILENT_GRACE_MS = 1000

/** True once the instance has started to stop: readiness then answers 503. */
export const isStopping = (app: FastifyInstance): boolean => stopping.has(app)

/**
 * How an instance stops, with or without a drain: from the start of its `close()`, every answer closes its
 * connection, including those of the requests already in flight (Node otherwise keeps their connection open, idle,
 * and the stop waited for it until SHUTDOWN_TIMEOUT_MS ran out); a connection left idle by an answer that had
 * already started is closed within `SWEEP_MS`, and one that has sent nothing at all `SILENT_GRACE_MS` into the stop. Node's own `closeIdleConnections` (which `server.close()` calls)
 * also takes a connection whose answer has ended but is still being sent, and cut a large answer short: it runs
 * only when no connection is sending.
 */
export function stopWithTheApp(app: FastifyInstance): void {
  const connections = new Set<Socket>()
  app.server.on('connection', (socket: Socket) => {
    connections.add(socket)
    socket.once('close', () => connections.delete(socket))
  })
  app.server.prependListener('request', noteLatestRequest)
  const closeIdleConnections = app.server.closeIdleConnections.bind(app.server)
  const closeIdle = () => {
    for (const socket of connections) if (isSending(socket)) return
    closeIdleConnections()
    // Node counts a connection that has sent nothing yet as busy (its headers' timeout runs from the connect), so
    // one opened ahead by a balancer or a probe held the stop until SHUTDOWN_TIMEOUT_MS, and the exit was 1.
    const since = stopping.get(app)
    if (since === undefined || performance.now() - since < SILENT_GRACE_MS) return
    for (const socket of connections) if (socket.bytesRead === 0) socket.destroy()
  }
  app.server.closeIdleConnections = closeIdle
  app.addHook('preClose', async () => {
    beginStopping(app)
    const sweep = setInterval(closeIdle, SWEEP_MS)
    sweep.unref()
    app.server.once('close', () => clearInterval(sweep))
  })
  // A callback, not an async function: it runs on every answer, and a promise a request costs more than the check.
  // A request read behind this one on its connection (pipelined) is answered too: the last one closes it.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (stopping.has(app) && isLastRequestRead(request.raw)) reply.header('connection', 'close')
    done(null, payload)
  })
}

/**
 * The first step of a graceful stop behind a load balancer (SHUTDOWN_DRAIN_MS, docs/deployment.md). The listener
 * closes, so that a balancer's new connections are refused, which it retries on another instance, whatever the
 * method. The connections already open stay: a request on one is answered, and the connection closed after it;
 * an idle one is left for the balancer to close (nginx's upstream `keepalive_timeout`). Closing an idle pooled
 * connection from this side races with a request the balancer sends on it at that moment: nginx does not send a
 * POST again, and answers it 503. Resolves once no connection is open, or after `ms`, with how many still are.
 */
export async function drain(app: FastifyInstance, ms: number): Promise<{ open: number }> {
  beginStopping(app)
  // The listener alone: http.Server#close would also close every idle connection. Fastify's close() later finds
  // it closed, which it allows, and still waits for the last connection to end (net.Server#close's callback does).
  Server.prototype.close.call(app.server)
  const deadline = performance.now() + ms
  for (;;) {
    const open = await openConnections(app)
    const left = deadline - performance.now()
    if (open === 0 || left <= 0) return { open }
    await sleep(Math.min(SWEEP_MS, left))
  }
}

function beginStopping(app: FastifyInstance): void {
  if (stopping.has(app)) return
  stopping.set(app, performance.now())
  closeConnectionsAfterTheirAnswer(app.server)
}

/** The latest request Node has read on a connection, noted as it is read (`noteLatestRequest`). */
const LATEST_REQUEST = Symbol('latest request')
type Connection = Socket & { [LATEST_REQUEST]?: IncomingMessage }

function noteLatestRequest(request: IncomingMessage): void {
  ;(request.socket as Connection)[LATEST_REQUEST] = request
}

/**
 * Whether Node has read no request after this one on its connection. One read behind it (pipelined) was handed to
 * Fastify already, and is answered on the connection.
 */
function isLastRequestRead(request: IncomingMessage): boolean {
  const latest = (request.socket as Connection | null)?.[LATEST_REQUEST]
  return latest === undefined || latest === request
}

/**
 * From now on, a request pipelined behind another answer runs only once Node gives it the connection (`socket`):
 * when the answer before it closes the connection, it is neither answered nor run (RFC 9112, 9.6), and the client
 * sends it again. (Every answer closes its connection when no request was read behind it: the `onSend` hook.)
 */
function closeConnectionsAfterTheirAnswer(server: FastifyInstance['server']): void {
  const listeners = (server.listeners('request') as Array<(request: IncomingMessage, response: ServerResponse) => void>).filter(
    (listener) => listener !== noteLatestRequest,
  )
  server.removeAllListeners('request')
  const dispatch = (request: IncomingMessage, response: ServerResponse) => {
    for (const listener of listeners) listener.call(server, request, response)
  }
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    noteLatestRequest(request)
    if (response.socket === null) response.once('socket', () => dispatch(request, response))
    else dispatch(request, response)
  })
}

/** An answer on the connection (Node's `_httpMessage`, ended or not) has bytes still waiting to be sent. */
function isSending(socket: Socket): boolean {
  return (socket as unknown as Record<string, unknown>)[ANSWER_UNDER_WAY] != null && socket.writableLength > 0
}

/** Node's field of a connection for the answer under way on it: not public, but what its `closeIdleConnections` reads. */
const ANSWER_UNDER_WAY = '_httpMessage'

const openConnections = (app: FastifyInstance) =>
  new Promise<number>((resolve, reject) => app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))))
