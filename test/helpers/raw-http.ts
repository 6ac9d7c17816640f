import { once } from 'node:events'
import { connect, type Socket } from 'node:net'

/** Raw HTTP/1.1 connections, for what a client library hides: requests held half-sent, pipelined, refused. */

/** A raw HTTP/1.1 connection, so that a request can be held half-sent and another pipelined behind it. */
export async function openConnection(
  port: number,
): Promise<{ socket: Socket; received: () => string; waitFor(text: string): Promise<void> }> {
  const socket = connect(port, '127.0.0.1')
  await once(socket, 'connect')
  let received = ''
  socket.on('data', (chunk) => (received += chunk.toString()))
  return {
    socket,
    received: () => received,
    async waitFor(text) {
      while (!received.includes(text)) await once(socket, 'data')
    },
  }
}

/** Sends `bytes` on a connection of their own and resolves with everything the server answers, once it closes it. */
export function exchange(url: string, bytes: string): Promise<string> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(bytes))
    let received = ''
    socket.on('data', (chunk) => (received += chunk.toString()))
    socket.on('error', reject)
    socket.on('close', () => resolve(received))
  })
}

/** The status of every answer in what a connection received, in order. */
export function statusesIn(received: string): number[] {
  return [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]))
}

/** Resolves once the server refuses new connections, which it does as soon as its shutdown has begun. */
export async function refusesConnections(port: number): Promise<void> {
  for (;;) {
    const socket = connect(port, '127.0.0.1')
    const refused = await new Promise<boolean>((resolve) => {
      socket.once('connect', () => resolve(false))
      socket.once('error', () => resolve(true))
    })
    socket.destroy()
    if (refused) return
  }
}
