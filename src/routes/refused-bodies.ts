import type { IncomingMessage } from 'node:http'
import type { FastifyError, FastifyInstance } from 'fastify'

/** How much of a refused body is read and dropped before the 413 is sent, and for how long at most. */
const DRAIN_BYTES = 256 * 1024 * 1024
const DRAIN_MS = 30_000

/**
 * Fastify answers a body over the limit with 413 at once, and Node then closes the connection with the rest of
 * the body unread, which resets it. A proxy still sending that body (nginx) then sees the reset instead of the
 * answer: it answers 502 itself and takes the instance out of rotation. So the rest of a refused body is read
 * and dropped before the answer (up to DRAIN_BYTES, for DRAIN_MS at most), and the 413 reaches the client.
 */
export function drainRefusedBodies(app: FastifyInstance): void {
  app.addHook('onError', async (request, _reply, error: FastifyError) => {
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' && !request.raw.complete) await drain(request.raw)
  })
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
