import type { TestServer } from './server.ts'

/** Every item of an async iterable, in order. */
export async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = []
  for await (const item of iterable) items.push(item)
  return items
}

/** The server's log lines of answered requests (one a request: `req`, `res.statusCode`, `time`), in order. */
export const requestLines = (server: TestServer) => server.logs.filter((line) => line.res !== undefined) as Array<Record<string, any>>
