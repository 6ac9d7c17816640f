import { call } from './server.ts'

/** The value of one sample of a Prometheus text exposition, or undefined when absent. */
export function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

/**
 * Reads an import over HTTP until it is finished, and returns it. For tests where a worker runs in another
 * process: nothing there to wait on but the interface (the test's own time limit bounds the wait).
 */
export async function finishedImport(baseUrl: string, key: string, importId: string): Promise<{ status: string; error: boolean }> {
  for (;;) {
    const found = (await call(`${baseUrl}/v1/imports/${importId}`, { key })).body.data_import
    if (found.status === 'finished') return found
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
