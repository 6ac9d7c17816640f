import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Issue } from '../errors.ts'
import { SERVER_ERROR_BODY, validationBody } from './errors.ts'
import { logRequestLine } from './request-log.ts'

/**
 * The errors Fastify and Node's HTTP parser answer on their own, before any route or error handler runs,
 * given the specification's bodies instead of the framework's. docs/interface.md lists their statuses.
 */

/** The longest path parameter the router reads (Fastify's default); a longer one is a 414. */
export const MAX_PARAM_LENGTH = 100

/**
 * The options of every listener of the service (the API, the worker's health port) under which the framework's own
 * refusals are answered here, as below, rather than in Fastify's bodies and with the system's time. With them,
 * `answerOutsideRoutes` on the instance, and Node's check of the Host header left to `refuseInvalidHost`.
 */
export const FRAMEWORK_REFUSALS = {
  frameworkErrors: answerFrameworkError,
  clientErrorHandler: answerClientError,
  routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
}

/**
 * Runs `answer` with the `Date` of an answer written outside the hooks that set it (`followClockOfStore`): the
 * service's time, a controlled clock's included, as every other answer tells it. Node's default would be the
 * system's, and an answer written to the socket has none. No hook read the store's clock for it, so it is read here
 * first: a move another process answered since this one's last request is told too. A read that fails leaves the
 * last offset read, as it does for a request.
 */
function withServiceDate(app: FastifyInstance, answer: (date: string) => void): void {
  const date = () => app.clock.now().toUTCString()
  if (!app.clock.sync) return answer(date())
  app.clock
    .sync()
    .catch(() => undefined)
    .then(() => answer(date()))
    .catch((error: unknown) => app.log.error({ err: error }, 'refusal failed'))
}

/**
 * Fastify's `frameworkErrors`: a path that is not valid percent-encoding, an over-long path parameter. Fastify
 * answers these outside the request lifecycle, so without its hooks: the request's line and its count in the
 * metrics are written here.
 */
function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  withServiceDate(request.server, (date) => {
    answerRefusal(error, request, reply, date)
    logRequestLine(request, reply)
    // Counted, not timed: Fastify starts no timer for these (its elapsed time is always 0).
    request.server.metrics.countAnswer(request.method, 'unmatched', reply.statusCode)
  })
}

function answerRefusal(error: FastifyError, request: FastifyRequest, reply: FastifyReply, date: string): void {
  reply.header('x-request-id', request.id)
  reply.header('date', date)
  if (error.code === 'FST_ERR_BAD_URL') {
    reply
      .code(400)
      .send(
        validationBody([
          { resource: 'path', description: 'the path is not valid percent-encoding (a % must be followed by two hex digits of UTF-8)' },
        ]),
      )
  } else if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    reply
      .code(414)
      .send(validationBody([{ resource: 'path', description: `a path parameter is longer than ${MAX_PARAM_LENGTH} characters` }]))
  } else {
    request.log.error({ err: error }, 'request failed')
    reply.code(500).send(SERVER_ERROR_BODY)
  }
}

/** What Node's HTTP parser refused, as a status and the issue the 400-family body names. */
function clientIssue(code: string | undefined): { status: number; issue: Issue } {
  if (code === 'HPE_HEADER_OVERFLOW')
    return { status: 431, issue: { resource: 'headers', description: 'the request headers are too large' } }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return { status: 408, issue: { resource: 'request', description: 'the request took too long to arrive' } }
  return { status: 400, issue: { resource: 'request', description: 'malformed HTTP request' } }
}

/**
 * Node's `clientError`: a request the HTTP parser refused (malformed, broken chunked encoding, headers too
 * large). It is answered with the 400-family body and the connection is closed; it is logged as one line at
 * debug level, never with a stack, so that a client sending garbage cannot fill the logs.
 *
 * The requests read whole before it on the connection (pipelined) ran or are running: their answers are sent
 * first, since a 400 in their place would say that nothing was done. Bytes after a request that asked to close
 * the connection are not a request at all: its answer closes the connection, and they are dropped.
 */
function answerClientError(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed || refused.has(socket)) return
  refused.add(socket)
  // Nothing more is read from the connection: its parser has failed, and every chunk after would fail again.
  socket.pause()
  if (error.code === 'HPE_CLOSED_CONNECTION' && answerUnderWay(socket)) return
  const { status, issue } = clientIssue(error.code)
  this.log.debug({ code: error.code, remoteAddress: socket.remoteAddress }, 'malformed HTTP request refused')
  // The answers awaited are bounded as a request is: past REQUEST_TIMEOUT_MS the connection is closed.
  const givingUp = setTimeout(() => socket.destroy(), this.config.requestTimeoutMs).unref()
  socket.once('close', () => clearTimeout(givingUp))
  afterAnswersUnderWay(socket, () =>
    withServiceDate(this, (date) => {
      clearTimeout(givingUp)
      if (socket.destroyed) return
      // A response already under way on this connection cannot be replaced by another: the socket is only closed.
      if (socket.writable && !answerUnderWay(socket)?.headersSent) {
        const body = JSON.stringify(validationBody([issue]))
        socket.write(
          `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nDate: ${date}\r\nConnection: close\r\n\r\n${body}`,
        )
        // Counted once answered, not timed: the parser knows neither the method nor when the request began.
        this.metrics.countAnswer('unparsed', 'unmatched', status)
      }
      socket.destroy()
    }),
  )
}

/** The connections whose HTTP was refused: the parser raises an error for each chunk after the first one. */
const refused = new WeakSet<Socket>()

/**
 * The answer this connection is sending or will send next, unless it is sent whole. Node's own clientError
 * default reads the same private field; there is no public one.
 */
function answerUnderWay(socket: Socket): ServerResponse | undefined {
  // oxlint-disable-next-line no-underscore-dangle
  const response = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage
  return response && !response.writableFinished ? response : undefined
}

/**
 * Runs `then` once the answers to every request read whole on the connection are sent (not the answer to the
 * request the parser refused halfway, which never comes). Node hands the connection to the next pipelined answer
 * when one finishes, so each is awaited in turn. A connection that closes first runs nothing.
 */
function afterAnswersUnderWay(socket: Socket, then: () => void): void {
  const response = answerUnderWay(socket)
  if (!response?.req.complete) return then()
  response.once('finish', () => setImmediate(() => afterAnswersUnderWay(socket, then)))
}

/**
 * What Node's HTTP server answers by itself, before Fastify sees a request, answered in the specification's
 * bodies: an `Expect` other than `100-continue` (Node's empty 417) and a `CONNECT` (Node closed the connection
 * without a word: no route tunnels), whose 405 names `allowed`, the methods of the listener's routes.
 */
export function answerOutsideRoutes(app: FastifyInstance, allowed = 'GET, HEAD, POST, PUT, PATCH, DELETE'): void {
  app.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) =>
    withServiceDate(app, (date) => {
      if (request.socket.destroyed) return
      const body = JSON.stringify(validationBody([{ resource: 'Expect', description: 'only 100-continue is understood' }]))
      response.writeHead(417, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), date })
      response.end(body)
      app.metrics.countAnswer(request.method ?? 'unparsed', 'unmatched', 417)
    }),
  )
  app.server.on('connect', (request: IncomingMessage, socket: Socket) => {
    // Node hands a CONNECT's socket over without its own error listener: a client resetting the connection around
    // the answer (write or read ECONNRESET) would otherwise be an uncaught error, and stop the instance.
    socket.on('error', () => socket.destroy())
    withServiceDate(app, (date) => {
      if (socket.destroyed) return
      const body = JSON.stringify({
        message: `Method CONNECT is not allowed on ${request.url}`,
        resource: 'method',
        type: 'MethodNotAllowedError',
      })
      // Node reads nothing more from a socket it handed over, nor closes it: bytes sent after the CONNECT (a tunnel's
      // first) hid the client's close, and a client that kept its side open kept the connection, each for good and
      // holding the instance's stop past SHUTDOWN_TIMEOUT_MS. They are read and dropped, and the connection closes
      // once its answer is written, as Node closes one after its own answers that say `Connection: close`.
      socket.resume()
      socket.end(
        `HTTP/1.1 405 ${STATUS_CODES[405]}\r\nAllow: ${allowed}\r\nContent-Type: application/json; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nDate: ${date}\r\nConnection: close\r\n\r\n${body}`,
        () => socket.destroy(),
      )
      app.metrics.countAnswer('CONNECT', 'unmatched', 405)
    })
  })
}
