import { isUtf8 } from 'node:buffer'
import { errorCodes, type FastifyInstance, type FastifyRequest } from 'fastify'
import { ValidationError } from '../errors.ts'
import { markingInexactIntegers } from './json-body.ts'
import { drainBeforeAnswer } from './refused-bodies.ts'

/**
 * Reads JSON bodies as Fastify's own parser does (secure-json-parse: a `__proto__` key, or a `constructor` holding
 * `prototype`, is refused), except for what it does silently:
 * - bytes that are not valid in the body's charset are refused, not replaced with U+FFFD (a name stored as
 *   `caf\ufffd` would be the client's data changed, and acknowledged);
 * - a body that is not valid UTF-8 is read in the charset its Content-Type names (`ISO-8859-1`), or refused when
 *   it names none or one unknown;
 * - a compressed body (`Content-Encoding: gzip`) is refused by name: it is not inflated, and would otherwise be
 *   reported as invalid JSON, or read as JSON when it is not compressed at all;
 * - a body refused for a forbidden key says so, rather than that it is not JSON;
 * - an integer past 2^53 that JSON.parse would round is marked (`InexactInteger`), for the body to be refused;
 * - an empty body is no body, rather than a 400 on a route that takes none, whatever its label (Python's urllib
 *   labels `data=b""` as a form); a body under another label than JSON, `text/plain` included, is refused, its
 *   rest read and dropped first (refused-bodies.ts).
 */
export function readJsonBodies(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    // No body at all, labelled JSON (as some clients label every request): read as no body, which the routes that
    // take none accept and the others refuse by their schema. Where no route is, the body is not parsed: a route
    // mistaken is the 404 (or 405), not a 400 for a body no route would read.
    if (body.length === 0 || request.is404) return done(null, undefined)
    let text: string
    try {
      refuseContentEncoding(request)
      text = decode(body, charsetOf(request.headers['content-type']))
    } catch (error) {
      return done(error as Error, undefined)
    }
    parseJson(request, text, (error, parsed) => {
      // Parsed again only when it may hold such a key: a large body that is not JSON would take as long again.
      if (error && FORBIDDEN_KEY.test(text) && isPlainJson(text)) return done(forbiddenKeyError(), undefined)
      done(error, error ? parsed : markingInexactIntegers(text, parsed))
    })
  })
  // Fastify reads text/plain as a string by default, which every route then refused for its shape ("data: must be
  // object"), not for its label: JSON that fetch sent as a string, labelled so, was told it is no object.
  app.removeContentTypeParser('text/plain')
  app.addContentTypeParser('*', (request, _payload, done) => {
    // Where no route is, the body is left unread, as Fastify leaves it without a parser: the answer is the 404.
    if (request.headers['content-length'] === '0' || request.is404) return done(null, undefined)
    // Read and dropped before the 400, as a 413's: a client sending it whole would otherwise meet a reset.
    drainBeforeAnswer(request.raw)
    done(new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE(request.headers['content-type']), undefined)
  })
}

function refuseContentEncoding(request: FastifyRequest): void {
  const encoding = request.headers['content-encoding']
  if (encoding === undefined || encoding.trim().toLowerCase() === 'identity') return
  throw new ValidationError({
    resource: 'Content-Encoding',
    description: `unsupported content encoding ${encoding}: send the body uncompressed`,
  })
}

/** The charset parameter of a Content-Type, lower case and unquoted; null when it names none. */
function charsetOf(contentType: string | undefined): string | null {
  const match = /;\s*charset\s*=\s*("?)([^";\s]+)\1/i.exec(contentType ?? '')
  return match ? match[2].toLowerCase() : null
}

/**
 * JSON between systems is UTF-8, and RFC 8259 gives a charset parameter no effect: a body that is valid UTF-8 is read
 * so whatever its label (some clients label every body ISO-8859-1), but for a UTF-16 one. Only one that is not is
 * read in the charset its Content-Type names, when the service knows it.
 */
function decode(body: Buffer, charset: string | null): string {
  const named = charset === null || charset === 'utf-8' || charset === 'utf8' ? null : decoderOf(charset)
  // UTF-16 (under any of its labels: ucs-2, unicode…) is no superset of ASCII: its text of ASCII characters is valid
  // UTF-8 too (with NULs), but not that text.
  if (isUtf8(body) && !named?.encoding.startsWith('utf-16')) return body.toString('utf8')
  if (charset === null || named === null) throw invalidBytes('UTF-8')
  if (named === undefined) {
    throw new ValidationError({ resource: 'Content-Type', description: `unsupported charset ${charset}: send UTF-8` })
  }
  try {
    return named.decode(body)
  } catch {
    throw invalidBytes(charset)
  }
}

/** The decoder of a charset label, undefined when TextDecoder knows none by it. */
function decoderOf(charset: string): InstanceType<typeof TextDecoder> | undefined {
  try {
    return new TextDecoder(charset, { fatal: true })
  } catch {
    return undefined
  }
}

const invalidBytes = (charset: string) =>
  new ValidationError({
    resource: 'body',
    description: `the body is not valid ${charset}: send UTF-8 (or name its charset in Content-Type)`,
  })

/** Text that may hold what secure-json-parse refuses (`__proto__`, or `constructor` holding `prototype`), escapes included. */
const FORBIDDEN_KEY = /__proto__|prototype|\\u/

/** True when JSON.parse reads the text: then what the secure parser refused was a forbidden key. */
function isPlainJson(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

const forbiddenKeyError = () =>
  new ValidationError({
    resource: 'body',
    description: 'a key named __proto__, or a constructor key holding prototype, is not accepted anywhere in the body',
  })
