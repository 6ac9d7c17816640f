import { constants } from 'node:zlib'
import fastifyCompress from '@fastify/compress'
import type { FastifyInstance } from 'fastify'

/**
 * Brotli's quality and gzip's level: the fastest settings that still shrink a v2 page about as much as the
 * defaults do (brotli's default, 11, takes seconds per page). Measured with `npm run bench:v2`.
 */
const BROTLI_QUALITY = 4
const GZIP_LEVEL = 4

/**
 * Compresses a response when the client asks for it (`Accept-Encoding: br` or `gzip`), with the maintained
 * plugin; without the header, or for a body under 1 KiB, the bytes go as they are. Request bodies are not
 * decompressed: a compressed upload is refused as before.
 */
export async function registerCompression(app: FastifyInstance): Promise<void> {
  await app.register(fastifyCompress, {
    global: true,
    globalDecompression: false,
    encodings: ['br', 'gzip'],
    threshold: 1024,
    brotliOptions: { params: { [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY } },
    zlibOptions: { level: GZIP_LEVEL },
  })
}
