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
