import { type Static, Type } from 'typebox'
import { storedId } from '../domain/ids.ts'
import { AnyKey, OrNull } from '../domain/schemas.ts'
import { ValidationError } from '../errors.ts'
import { newId } from '../ids.ts'
import { mulberry32 } from '../seeded-random.ts'

/**
 * Fault scenarios, as WireMock's faults or a toxic proxy give them: per company, a fault names the requests it
 * matches (a method, a path whose `*` stands for one segment, and query parameters) and what it does to them: answer a status with
 * the specification's body, wait first, close the connection, or serve the request and close the connection
 * instead of answering; on every matching request, on the next N, or on
 * a seeded share of them. Kept in the memory of the process that serves the requests. Free of HTTP: the hook in
 * `src/routes/test-kit.ts` applies what `fire` decides.
 */

/** The statuses a fault may answer: those the specification (or this service) gives a body for. */
export const FAULT_STATUSES = [400, 401, 403, 404, 429, 500, 503] as const
export const FAULT_METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'PATCH', '*'] as const

const Status = Type.Enum([...FAULT_STATUSES], { description: 'Answer this status, with the body the specification gives it' })

/** The most query parameters a fault may name: a matcher, not a request's copy. */
const MAX_QUERY_NAMES = 20
const QueryMatch = Type.Record(AnyKey, Type.String({ maxLength: 2048 }), {
  maxProperties: MAX_QUERY_NAMES,
  description:
    'Match only requests whose query has each of these parameters with this value (one of its values, when repeated), as the route reads them (percent-decoded); others may be present',
})
/** A request's query as the router parsed it: a repeated parameter as an array. */
export type RequestQuery = Record<string, string | string[] | undefined>

/** A fault as it is asked for (`POST /admin/companies/{id}/faults`). */
export const FaultDefinitionSchema = Type.Object(
  {
    method: Type.String({ description: 'GET, PUT, POST, DELETE, PATCH, or * for any' }),
    path: Type.String({
      description:
        'A path of the v1 or v2 interface; `*` stands for one segment: /v2/reporting/*/statements. Segments are compared percent-decoded',
    }),
    query: Type.Optional(QueryMatch),
    status: Type.Optional(Status),
    delay_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 600_000, description: 'Wait this long first (real milliseconds)' })),
    delay_max_ms: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 600_000, description: 'Wait a time drawn uniformly from delay_ms to this' }),
    ),
    drop: Type.Optional(Type.Boolean({ description: 'Close the connection without answering' })),
    drop_answer: Type.Optional(
      Type.Boolean({
        description: 'Serve the request, then close the connection instead of answering: what it writes is done, its answer lost',
      }),
    ),
    times: Type.Optional(Type.Integer({ minimum: 1, description: 'Fire on the next N matching requests only' })),
    skip: Type.Optional(
      Type.Integer({ minimum: 1, description: 'Let the next N matching requests through first (the second part of a call split in two)' }),
    ),
    probability: Type.Optional(
      Type.Number({ exclusiveMinimum: 0, maximum: 1, description: 'Fire on this share of the matching requests, drawn from `seed`' }),
    ),
    seed: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 4_294_967_295, description: 'The seed of the draws (random when absent, and shown)' }),
    ),
    retry_after: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 3600,
        description: 'With status 429 (default 1) or 503 (default none): the Retry-After, in seconds',
      }),
    ),
  },
  { additionalProperties: false },
)
export type FaultDefinition = Static<typeof FaultDefinitionSchema>

/**
 * A fault as it is listed: what it does, how often it fired, and when it was set (by the service's clock). Its
 * `seed` is the one given, or one chosen at random and shown, so that a run can be replayed.
 */
export const FaultSchema = Type.Object({
  id: Type.String(),
  method: Type.String(),
  path: Type.String(),
  query: Type.Union([QueryMatch, Type.Null()]),
  status: Type.Union([Status, Type.Null()]),
  delay_ms: OrNull(Type.Integer()),
  delay_max_ms: OrNull(Type.Integer()),
  drop: Type.Boolean(),
  drop_answer: Type.Boolean(),
  times: OrNull(Type.Integer()),
  skip: OrNull(Type.Integer()),
  probability: Type.Union([Type.Number(), Type.Null()]),
  seed: Type.Integer(),
  retry_after: OrNull(Type.Integer()),
  fired: Type.Integer({ description: 'How many requests it fired on' }),
  created_at: Type.String(),
})
export type Fault = Static<typeof FaultSchema>

/** What a fault that fired does to one request. */
export interface FiredFault {
  fault: Fault
  /** How long to wait before anything else (0: no wait). */
  delayMs: number
}

/** A fault with its matcher and the state of its draws. */
interface LiveFault {
  fault: Fault
  matches: (method: string, path: string, query: RequestQuery) => boolean
  draw: () => number
  /** How many matching requests it has let through for its `skip`. */
  skipped: number
}

/**
 * A fault's path pattern, segment by segment: null for `*`, which stands for one path segment (never empty, never a
 * `/`); any other segment percent-decoded (a `%2A` written in a pattern is a segment `*`, not the wildcard).
 */
const expectedSegments = (pattern: string): (string | null)[] =>
  pattern.split('/').map((segment) => (segment === '*' ? null : decodedSegment(segment)))

/** Whether a segment of a pattern takes a path's segment: compared percent-decoded, as the router reads them. */
const takes = (expected: string | null, segment: string): boolean =>
  expected === null ? segment !== '' : expected === decodedSegment(segment)

/** The matcher of a method, a path pattern and query parameters: `/v1/tables/%64eals/records` is the table `deals`. */
function matcherOf(method: string, pattern: string, query: Record<string, string> | null): LiveFault['matches'] {
  const expected = expectedSegments(pattern)
  const parameters = Object.entries(query ?? {})
  return (requestMethod, requestPath, requestQuery) => {
    if (method !== '*' && method !== requestMethod) return false
    const segments = requestPath.split('/')
    if (segments.length !== expected.length || !expected.every((segment, index) => takes(segment, segments[index]))) return false
    return parameters.every(([name, value]) => {
      const sent = requestQuery[name]
      return Array.isArray(sent) ? sent.includes(value) : sent === value
    })
  }
}

/** A path segment percent-decoded; as written when it is not valid percent-encoding. */
function decodedSegment(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/** A route as the router has it (`src/routes/route-table.ts`): a `:name` segment of its path is one parameter. */
export interface InterfaceRoute {
  path: string
  methods: readonly string[]
}

/**
 * Whether a fault's method and path pattern can match a request of the route: as a request's path would be matched,
 * a parameter of the route standing for any one segment the pattern gives there (not an empty one, nor one longer,
 * percent-decoded, than `maxParamLength`: the router answers such a request 414 before any fault).
 */
function reaches(method: string, pattern: string, route: InterfaceRoute, maxParamLength: number): boolean {
  if (method !== '*' && !route.methods.includes(method)) return false
  const expected = expectedSegments(pattern)
  const segments = route.path.split('/')
  const parameterTakes = (segment: string | null) => segment === null || (segment !== '' && segment.length <= maxParamLength)
  return (
    segments.length === expected.length &&
    expected.every((segment, index) => (segments[index].startsWith(':') ? parameterTakes(segment) : takes(segment, segments[index])))
  )
}

const PATH_EXPECTED =
  'expected a path of the v1 or v2 interface, such as /v2/reporting/*/statements (`*` for one segment, no query): faults never touch the admin, health or metrics routes'

/** The problems of a path: where it may point, and whether any route of the interface takes it. */
function pathProblems(method: string, path: string, routes: readonly InterfaceRoute[], maxParamLength: number): string[] {
  const [first, root] = path.split('/')
  if (first !== '' || !['v1', 'v2', '*'].includes(root ?? '') || /[?#\s]/.test(path)) return [PATH_EXPECTED]
  if (/[{}]|\*\*/.test(path))
    return [
      'a path parameter is written `*`, one segment, and `**` is not a pattern: /v2/reporting/*/statements, not /v2/reporting/{table_id}/statements',
    ]
  if (routes.length > 0 && !routes.some((route) => reaches(method, path, route, maxParamLength)))
    return [
      routes.some((route) => reaches(method, path, route, Infinity))
        ? `a path parameter is longer than ${maxParamLength} characters, which the router answers 414 before any fault: the fault would never fire`
        : `no route of the v1 or v2 interface takes ${method === '*' ? 'any method' : method} on ${path}: the fault would never fire`,
    ]
  return []
}

/** The problems of a definition beyond its schema's: what it does, and the paths it may touch. */
function problemsOf(
  definition: FaultDefinition,
  routes: readonly InterfaceRoute[],
  maxParamLength: number,
): { resource: string; description: string }[] {
  const problems: { resource: string; description: string }[] = []
  const method = definition.method.toUpperCase()
  if (!(FAULT_METHODS as readonly string[]).includes(method))
    problems.push({ resource: 'method', description: `expected one of ${FAULT_METHODS.join(', ')}` })
  else
    for (const description of pathProblems(method, definition.path, routes, maxParamLength))
      problems.push({ resource: 'path', description })
  const delays = definition.delay_ms !== undefined || definition.delay_max_ms !== undefined
  if (definition.status === undefined && !definition.drop && !definition.drop_answer && !delays)
    problems.push({
      resource: 'status',
      description:
        'a fault answers a status, waits (delay_ms, delay_max_ms), or drops the connection before serving the request (drop) or after (drop_answer): give at least one',
    })
  if (definition.drop && definition.status !== undefined)
    problems.push({ resource: 'drop', description: 'a dropped connection answers no status: give drop or status, not both' })
  if (definition.drop_answer && (definition.drop || definition.status !== undefined))
    problems.push({
      resource: 'drop_answer',
      description: 'a request whose answer is dropped is served as usual: give drop_answer without status or drop',
    })
  if (definition.delay_max_ms !== undefined && definition.delay_max_ms < (definition.delay_ms ?? 0))
    problems.push({ resource: 'delay_max_ms', description: 'expected at least delay_ms' })
  if (definition.retry_after !== undefined && definition.status !== 429 && definition.status !== 503)
    problems.push({ resource: 'retry_after', description: 'only a fault answering 429 or 503 has a Retry-After' })
  return problems
}

/** Every company's faults, in the order they were set: the first that fires on a request is the one applied. */
export class FaultBoard {
  readonly #byCompany = new Map<string, LiveFault[]>()
  /** The v1 and v2 routes, which a fault's path must reach (none known: any path of the interface is taken). */
  readonly #routes: () => readonly InterfaceRoute[]
  /** The longest path parameter the router reads. */
  readonly #maxParamLength: number

  constructor(routes: () => readonly InterfaceRoute[] = () => [], maxParamLength = Infinity) {
    this.#routes = routes
    this.#maxParamLength = maxParamLength
  }

  /** Sets a fault of the company; ValidationError when the definition cannot be applied. */
  add(companyId: string, definition: FaultDefinition, now: Date): Fault {
    const problems = problemsOf(definition, this.#routes(), this.#maxParamLength)
    if (problems.length > 0) throw new ValidationError(problems)
    const method = definition.method.toUpperCase()
    const seed = definition.seed ?? Math.floor(Math.random() * 4_294_967_296)
    const fault: Fault = {
      id: newId(),
      method,
      path: definition.path,
      query: definition.query ?? null,
      status: definition.status ?? null,
      delay_ms: definition.delay_ms ?? (definition.delay_max_ms === undefined ? null : 0),
      delay_max_ms: definition.delay_max_ms ?? null,
      drop: definition.drop ?? false,
      drop_answer: definition.drop_answer ?? false,
      times: definition.times ?? null,
      skip: definition.skip ?? null,
      probability: definition.probability ?? null,
      seed,
      retry_after: definition.status === 429 ? (definition.retry_after ?? 1) : (definition.retry_after ?? null),
      fired: 0,
      created_at: now.toISOString(),
    }
    const faults = this.#byCompany.get(companyId) ?? []
    faults.push({ fault, matches: matcherOf(method, fault.path, fault.query), draw: mulberry32(seed), skipped: 0 })
    this.#byCompany.set(companyId, faults)
    return { ...fault }
  }

  list(companyId: string): Fault[] {
    return (this.#byCompany.get(companyId) ?? []).map((live) => ({ ...live.fault }))
  }

  /** Removes one fault of the company; false when it has none with this id. */
  remove(companyId: string, faultId: string): boolean {
    const faults = this.#byCompany.get(companyId) ?? []
    const id = storedId(faultId)
    const kept = faults.filter((live) => live.fault.id !== id)
    if (kept.length === faults.length) return false
    this.#byCompany.set(companyId, kept)
    return true
  }

  clear(companyId: string): void {
    this.#byCompany.delete(companyId)
  }

  clearAll(): void {
    this.#byCompany.clear()
  }

  /**
   * The fault that fires on a request of the company, if any: the first, in the order they were set, that matches
   * it, has let its `skip` through, has firings left (`times`) and whose draw falls in its share (`probability`).
   * Counts the firing.
   */
  fire(companyId: string, method: string, path: string, query: RequestQuery): FiredFault | null {
    for (const live of this.#byCompany.get(companyId) ?? []) {
      const { fault } = live
      if (!live.matches(method, path, query)) continue
      if (fault.skip !== null && live.skipped < fault.skip) {
        live.skipped++
        continue
      }
      if (fault.times !== null && fault.fired >= fault.times) continue
      if (fault.probability !== null && live.draw() >= fault.probability) continue
      fault.fired++
      const least = fault.delay_ms ?? 0
      const delayMs = fault.delay_max_ms === null ? least : least + Math.floor(live.draw() * (fault.delay_max_ms - least + 1))
      return { fault: { ...fault }, delayMs }
    }
    return null
  }
}
