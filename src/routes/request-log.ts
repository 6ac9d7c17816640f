import { type FastifyReply, type FastifyRequest, LogController } from 'fastify'

/**
 * One log line per request (docs/operations.md): method, url, status, time, labelled with the request id. A
 * request whose connection closed before its answer was sent gets its line too, with no status: it may have
 * run (an upsert that made an import), and the log is where an operator looks for it.
 */

const LOGGED = Symbol('request logged')
type Logged = FastifyRequest & { [LOGGED]?: true }

/** Fastify's request logging, as one line per request, its answer sent or not. */
export class OneLinePerRequest extends LogController {
  constructor() {
    super({ requestIdLogLabel: 'request_id' })
  }

  /** Nothing is logged as a request arrives; its line is written once it is answered, or once its connection closes. */
  override incomingRequest(request: FastifyRequest, reply: FastifyReply): void {
    reply.raw.once('close', () => {
      if (reply.raw.writableFinished || (request as Logged)[LOGGED]) return
      ;(request as Logged)[LOGGED] = true
      reply.log.info({ req: request, res: { statusCode: null }, responseTime: reply.elapsedTime }, 'request closed before its answer')
    })
  }

  override requestCompleted(_error: unknown, request: FastifyRequest, reply: FastifyReply): void {
    logRequestLine(request, reply)
  }
}

/** A request's one line (method, url, status, time), labelled with its id. */
export function logRequestLine(request: FastifyRequest, reply: FastifyReply): void {
  ;(request as Logged)[LOGGED] = true
  reply.log.info({ req: request, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime }, 'request')
}
