import type { IncomingMessage, ServerResponse } from 'node:http'
import { Readable } from 'node:stream'
import type { FastifyError, FastifyInstance } from 'fastify'

/** How much of a refused body is read and dropped before the 413 is sent, and for how long at most. */
const DRAIN_BYTES = 256 * 1024 * 1024
const DRAIN_MS = 30_000
/**
 * How long a refusal waits for the body of a request sent with `Expect: 100-continue` to start coming: a client
 * that waits for 100 sends none (curl waits a second before it sends it anyway), and one that sends it at once
 * (as Node's client does) has sent some by then.
 */
const FIRST_BYTES_MS = 200

/** Requests refused before their body was read (`drainBeforeAnswer`). */
const refusedUnread = new WeakSet<IncomingMessage>()

/**
 * Has the rest of the body of a request refused before it was read (a full import queue) read and dropped before
 * the answer, as a 413's is: a client that sends the whole body before it reads the answer (Python's http.client, a
 * proxy) would otherwise see the connection reset, never the answer.
 */
export function drainBeforeAnswer(request: IncomingMessage): void {
  refusedUnread.add(request)
}

/** Requests sent with `Expect: 100-continue` whose body the service has not asked for yet (no 100 sent). */
const awaitingContinue = new WeakSet<IncomingMessage>()

/**
 * Fastify answers a body over the limit with 413 at once, and Node then closes the connection with the rest of
 * the body unread, which resets it. A proxy still sending that body (nginx) then sees the reset instead of the
 * answer: it answers 502 itself and takes the instance out of rotation. So the rest of a refused body is read
 * and dropped before the answer (up to DRAIN_BYTES, for DRAIN_MS at most), and the 413 reaches the client. A
 * client that waits for 100 Continue sends no body: when none has started to come after FIRST_BYTES_MS, it is
 * answered then.
 */
export function drainRefusedBodies(app: FastifyInstance): void {
  app.addHook('onError', async (request, _reply, error: FastifyError) => {
    if ((error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || refusedUnread.has(request.raw)) && !request.raw.complete)
      await drain(request.raw, awaitingContinue.has(request.raw) ? FIRST_BYTES_MS : DRAIN_MS)
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

/**
 * The body of `request`, which sends 100 Continue on `response` when it is first read, and only then listens to
 * the request: an error of a request whose body is never read (a GET with a length, a refusal) must stay Node's
 * to drop, with no stream of ours to raise it where nobody listens.
 */
function continuingOnFirstRead(request: IncomingMessage, response: ServerResponse): Readable {
  let reading = false
  const body: Readable = new Readable({
    read() {
      if (!reading) {
        reading = true
        forward(request, body)
      }
      if (awaitingContinue.delete(request)) response.writeContinue()
      request.resume()
    },
    destroy(error, callback) {
      request.destroy()
      callback(error)
    },
  })
  // Fastify stops listening to a body it refused (over the limit) while the rest is drained: a client leaving then
  // fails the request, with nobody left to tell, which would end the process.
  body.on('error', () => {})
  return body
}

/** Passes what `request` receives, its end, and its failure on to `body`, whose reader holds it. */
function forward(request: IncomingMessage, body: Readable): void {
  request.on('data', (chunk: Buffer) => {
    if (!body.push(chunk)) request.pause()
  })
  request.once('end', () => body.push(null))
  request.once('error', (error) => body.destroy(error))
  request.once('close', () => {
    if (!request.complete) body.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }))
  })
}

/** Reads and drops the rest of `body`: up to DRAIN_BYTES, for DRAIN_MS at most, or `firstBytesMs` if none comes. */
function drain(body: IncomingMessage, firstBytesMs: number): Promise<void> {
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
      // Once the body comes, it is read for DRAIN_MS from its first bytes.
      if (received === 0 && firstBytesMs < DRAIN_MS) {
        clearTimeout(timer)
        timer = setTimeout(done, DRAIN_MS)
      }
      received += chunk.length
      if (received > DRAIN_BYTES) done()
    }
    let timer = setTimeout(done, firstBytesMs)
    body.on('data', count)
    body.once('end', done)
    body.once('close', done)
    body.resume()
  })
}
