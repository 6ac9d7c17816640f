/**
 * The Node flags `npm start` runs the server with (package.json; the image sets them in NODE_OPTIONS): the
 * benchmarks start the server the same way. A young generation of 2 MiB semi-spaces instead of 16: a request
 * leaves little alive, so collecting it often costs little, and the process keeps about 45 MiB less resident
 * (docs/performance.md).
 */
export const SERVER_NODE_FLAGS = ['--max-semi-space-size=2']
