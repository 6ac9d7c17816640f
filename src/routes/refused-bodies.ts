import type { IncomingMessage, ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import type { FastifyError, FastifyInstance } from 'fastify'

/** How much of a refused body is read and dropped before the 413 is sent, and for how long at most. */
const DRAIN_BYTES = 256 * 1024 * 1024
const DRAIN_MS = 30_000

/** Requests sent with `Expect: 100-continue` whose body the service has not asked for yet (no 100 sent). */
const awaitingContinue = new WeakSet<IncomingMessage>()

/**
 * Fastify answers a body over the limit with 413 at once, and Node then closes the connection with the rest of
 * the body unread, which resets it. A proxy still sending that body (nginx) then sees the reset instead of the
 * answer: it answers 502 itself and takes the instance out of rotation. So the rest of a refused body is read
 * and dropped before the answer (up to DRAIN_BYTES, for DRAIN_MS at most), and the 413 reaches the client. A
 * client that waits for 100 Continue sends no body: it is answered at once.
 */
export function drainRefusedBodies(app: FastifyInstance): void {
  app.addHook('onError', async (request, _reply, error: FastifyError) => {
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' && !request.raw.complete && !awaitingContinue.has(request.raw)) await drain(request.raw)
  })
}

/**
 * A client that sends `Expect: 100-continue` (curl does, for a body over 1 MiB) waits for 100 Continue before it
 * sends the body, which Node would send as the request arrives, before the service looks at it. The 100 is sent
 * when the body is first read instead, so that a request refused before (a key missing, the rate limit, the
 * import queue full, a body over the limit by its Content-Length) is answered without its body being sent. Node
 * closes the connection after such an answer, since the client may still send the body.
 */
export function continueWhenBodyIsRead(app: FastifyInstance): void {
  app.server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    awaitingContinue.add(request)
    app.server.emit('request', request, response)
  })
  // A callback, not an async hook: it runs on every request, and a promise each would cost them all.
  app.addHook('preParsing', (request, reply, payload, done) =>
    done(null, awaitingContinue.has(request.raw) ? continuingOnFirstRead(request.raw, reply.raw) : payload),
  )
}

/** The body of `request`, which sends 100 Continue on `response` when it is first read. */
function continuingOnFirstRead(request: IncomingMessage, response: ServerResponse): Readable {
  const body = new Readable({
    read() {
      if (awaitingContinue.delete(request)) response.writeContinue()
      request.resume()
    },
    destroy(error, callback) {
      request.destroy()
      callback(error)
    },
  })
  request.on('data', (chunk: Buffer) => {
    if (!body.push(chunk)) request.pause()
  })
  request.once('end', () => body.push(null))
  request.once('error', (error) => body.destroy(error))
  request.once('close', () => {
    if (!request.complete) body.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }))
  })
  request.pause()
  return body
}

function drain(body: IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    let received = 0
    const done = () => {
      clearTimeout(timer)
      body.off('data', count)
      body.off('end', done)
      body.off('close', done)
      resolve()
    }
    const count = (chunk: Buffer) => {
      received += chunk.length
      if (received > DRAIN_BYTES) done()
    }
    const timer = setTimeout(done, DRAIN_MS)
    body.on('data', count)
    body.once('end', done)
    body.once('close', done)
    body.resume()
  })
}
