import { type FastifyReply, type FastifyRequest, LogController } from 'fastify'
import type { LoggerOptions } from 'pino'
import type { LogLevel } from './config.ts'

/** Query parameters whose values never reach a log line, should a client put a secret there. */
const SECRET_QUERY_PARAMETERS = /^(api[-_]?key|x-api-key|key|token|access_token|secret)$/i

/** The path and query of a URL with secret-looking query values replaced. */
export function redactUrl(url: string): string {
  const question = url.indexOf('?')
  if (question === -1) return url
  const params = new URLSearchParams(url.slice(question + 1))
  for (const name of new Set(params.keys())) if (SECRET_QUERY_PARAMETERS.test(name)) params.set(name, '[Redacted]')
  return `${url.slice(0, question)}?${params.toString()}`
}

/** pino options: API keys and bearer tokens are redacted wherever a header object is logged. */
export function loggerOptions(level: LogLevel): LoggerOptions {
  return {
    level,
    redact: {
      paths: [
        'req.headers["x-api-key"]',
        'req.headers.authorization',
        'headers["x-api-key"]',
        'headers.authorization',
        '*.headers["x-api-key"]',
        '*.headers.authorization',
      ],
      censor: '[Redacted]',
    },
    serializers: {
      req: (request: FastifyRequest) => ({
        method: request.method,
        url: redactUrl(request.url),
        remoteAddress: request.ip,
      }),
    },
  }
}

/** Fastify's request logging, as one line per request (method, url, status, time) labelled with the request id. */
export class OneLinePerRequest extends LogController {
  constructor() {
    super({ requestIdLogLabel: 'request_id' })
  }

  override incomingRequest(): void {}

  override requestCompleted(_error: unknown, request: FastifyRequest, reply: FastifyReply): void {
    reply.log.info({ req: request, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime }, 'request')
  }
}
