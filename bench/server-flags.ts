/**
 * Node flags for the server the benchmarks start: none, as `npm start` gives none. BENCH_NODE_FLAGS sets them
 * (e.g. `BENCH_NODE_FLAGS=--max-semi-space-size=2`), to compare; docs/performance.md has what that one did.
 */
export const SERVER_NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean)
