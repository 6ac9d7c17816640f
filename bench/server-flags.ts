import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'

/**
 * Node flags for the server the benchmarks start: those `npm start` gives (the flags before `src/cli.ts` in
 * package.json's start script), so that a benchmark measures the server as it is run. BENCH_NODE_FLAGS replaces
 * them (e.g. `BENCH_NODE_FLAGS=--max-semi-space-size=8`), to compare; docs/performance.md has what such flags did.
 */
export const SERVER_NODE_FLAGS = process.env.BENCH_NODE_FLAGS === undefined ? startScriptFlags() : splitFlags(process.env.BENCH_NODE_FLAGS)

/** The node flags of package.json's start script (those before `src/cli.ts`), paths made absolute. */
export function startScriptFlags(): string[] {
  const root = resolve(import.meta.dirname, '..')
  const words = splitFlags(JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')).scripts.start)
  const cli = words.indexOf('src/cli.ts')
  if (words[0] !== 'node' || cli < 0)
    throw new Error(`package.json's start script is not "node [flags] src/cli.ts ...": ${words.join(' ')}`)
  // A path in the script is relative to the package's folder, where npm runs it.
  return words.slice(1, cli).map((word) => (word.startsWith('./') ? resolve(root, word) : word))
}

function splitFlags(text: string): string[] {
  return text.split(' ').filter(Boolean)
}
