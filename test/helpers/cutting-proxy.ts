import { once } from 'node:events'
import { createServer, type Socket, connect } from 'node:net'

export interface CuttingProxy {
  url: string
  /**
   * Cuts a connection once `afterBytes` more bytes of answers have passed, in the middle of an answer;
   * counted from the first request whose request line matches `from`, when given.
   */
  cutAfter(afterBytes: number, from?: RegExp): void
  /** Refuses every connection (the service is gone) until `heal`. */
  refuse(): void
  heal(): void
  /** How many connections it cut. */
  readonly cuts: number
  close(): Promise<void>
}

/**
 * A TCP proxy in front of a test server that can drop a connection in the middle of an answer, as a flaky
 * network or a restarting load balancer does, or refuse connections altogether.
 */
export async function startCuttingProxy(target: string): Promise<CuttingProxy> {
  const { hostname, port } = new URL(target)
  const sockets = new Set<Socket>()
  let budget: number | null = null
  let armedBy: RegExp | null = null
  let refusing = false
  let cuts = 0

  const server = createServer((client) => {
    if (refusing) {
      client.destroy()
      return
    }
    const upstream = connect(Number(port), hostname)
    sockets.add(client).add(upstream)
    const drop = () => {
      client.destroy()
      upstream.destroy()
    }
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
    client.on('data', (chunk: Buffer) => {
      if (armedBy?.test(chunk.toString('latin1').split('\r\n', 1)[0])) armedBy = null
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      if (armedBy !== null) {
        client.write(chunk)
        return
      }
      if (budget !== null && chunk.length > budget) {
        // Forward part of the answer, then cut: the client sees a connection closed mid-answer.
        client.write(chunk.subarray(0, Math.max(1, budget)))
        budget = null
        cuts++
        drop()
        return
      }
      if (budget !== null) budget -= chunk.length
      client.write(chunk)
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`

  return {
    url,
    cutAfter(afterBytes, from) {
      budget = afterBytes
      armedBy = from ?? null
    },
    refuse() {
      refusing = true
      for (const socket of sockets) socket.destroy()
      sockets.clear()
    },
    heal() {
      refusing = false
    },
    get cuts() {
      return cuts
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      server.close()
      await once(server, 'close')
    },
  }
}
