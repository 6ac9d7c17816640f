/**
 * The Node flags `npm start` runs the server with (package.json; the image sets them in NODE_OPTIONS): the
 * benchmarks start the server the same way. A young generation of 2 MiB semi-spaces instead of 16: a request
 * leaves little alive, so collecting it often costs little, and the process keeps about 45 MiB less resident
 * (docs/performance.md). BENCH_NODE_FLAGS replaces them (`BENCH_NODE_FLAGS=` for none), to compare.
 */
export const SERVER_NODE_FLAGS = process.env.BENCH_NODE_FLAGS === undefined ? ['--max-semi-space-size=2'] : process.env.BENCH_NODE_FLAGS.split(' ').filter(Boolean)
