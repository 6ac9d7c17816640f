import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { authenticationOf } from '../auth/api-key-hook.ts'
import { carriesSecret, isKeySecret, secretsOf } from '../auth/api-keys.ts'
import { REDACTED } from '../logger.ts'
import {
  ForbiddenError,
  NotFoundError,
  ServiceUnavailableError,
  SimulatedServerError,
  TooManyRequestsError,
  UnauthorizedError,
  ValidationError,
} from '../errors.ts'
import { type Fault, FaultBoard, type RequestQuery } from '../test-kit/faults.ts'
import { MAX_PARAM_LENGTH } from './framework-errors.ts'
import { originFormPath } from './route-table.ts'
import { MAX_RECORDED_QUERY_VALUES, RequestJournal } from '../test-kit/journal.ts'

/** What tests set and read in a running service, beside its data: fault scenarios, and the request journal. */
export interface TestKit {
  faults: FaultBoard
  journal: RequestJournal
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Present with the admin routes (ADMIN_TOKEN), which alone set and read it; null without. */
    testKit: TestKit | null
  }
}

/** The fault that fired on each request, and the import each upsert answered. */
const firedFaults = new WeakMap<FastifyRequest, Fault>()
const importIds = new WeakMap<FastifyRequest, string>()
/** When each request arrived, by the service's clock, and its place in the order of arrival. */
const arrivals = new WeakMap<FastifyRequest, { at: number; order: number }>()
/** The requests written to the journal: an answer and the connection's close may both try. */
const recorded = new WeakSet<FastifyRequest>()
/** Requests whose answer is under way (past onSend), and those whose client left while they were handled. */
const answering = new WeakSet<FastifyRequest>()
const abandoned = new WeakSet<FastifyRequest>()
/** Requests served as usual whose answer a fault drops (`drop_answer`). */
const answersDropped = new WeakSet<FastifyRequest>()

/** The fault that fired on the request, if one did (the metrics tell an injected 429 from the rate limit's). */
export function injectedFaultOf(request: FastifyRequest): Fault | undefined {
  return firedFaults.get(request)
}

/** Gives the app its test kit when it has admin routes: without them nobody can set a fault or read the journal. */
export function registerTestKit(app: FastifyInstance): void {
  // A fault's path must be one of the v1 and v2 routes', which the app records as they are registered.
  const interfaceRoutes = () => app.knownRoutes.filter((route) => /^\/v[12]\//.test(route.path))
  const kit = app.config.adminToken
    ? { faults: new FaultBoard(interfaceRoutes, MAX_PARAM_LENGTH), journal: new RequestJournal(app.config.requestJournalSize) }
    : null
  app.decorate('testKit', kit)
  if (!kit) return
  // On the app, so before the hooks of the v1 and v2 routes (the rate limit's, the key's), and after the clock's
  // own (which reads a move made by another process): a request's time of arrival is not moved by the clock moving
  // while it is served, nor missed when the rate limit answers it.
  app.addHook('onRequest', (request, _reply, done) => {
    arrivals.set(request, { at: app.clock.now().getTime(), order: kit.journal.arrived() })
    done()
  })
}

/**
 * The test kit's hooks on the routes of `api` (the v1 and v2 trees, after the auth hook; never the admin, health
 * or metrics routes): each request of a company may fire one of its faults, and every answered request of a
 * company is written to its journal.
 */
export function applyTestKit(api: FastifyInstance): void {
  const kit = api.testKit
  if (!kit) return

  // A request whose connection closes before its answer is written (the client gave up) is kept too, status null:
  // Fastify's onResponse does not come for it. While its handler still runs, it is kept once the handler answers
  // (onSend), with the import its upsert made; once its answer is being written, at once.
  api.addHook('onRequest', (request, reply, done) => {
    reply.raw.once('close', () => {
      if (reply.raw.writableFinished) return
      if (answering.has(request) || reply.raw.headersSent) keepUnanswered(kit, request, reply)
      else abandoned.add(request)
    })
    done()
  })

  // A fault's delay under way when the instance stops ends then, and its request is served as usual: a delay of up
  // to ten minutes would otherwise hold the stop past SHUTDOWN_TIMEOUT_MS, and the process would exit 1.
  const stopping = new AbortController()
  api.addHook('preClose', async () => stopping.abort())

  api.addHook('onSend', async (request, reply, payload) => {
    answering.add(request)
    if (abandoned.has(request)) keepUnanswered(kit, request, reply)
    else if (answersDropped.has(request)) {
      // Served, and its answer lost on the way, as a network failure after the service wrote it does: the client
      // cannot tell whether its write was done.
      await record(kit, request, reply, null)
      reply.hijack()
      request.raw.socket.destroy()
    }
    return payload
  })

  // After the body is read (an answer before it would leave the rest of the body in the connection), before the
  // request's own checks.
  api.addHook('preValidation', async (request, reply) => {
    // A path no route takes, or a method its route does not (404, 405), is the client's mistake, answered as such:
    // a fault whose `*` matches it would hide it, and spend its `times` on it.
    if (request.is404) return
    const fired = kit.faults.fire(request.principal.company.id, request.method, originFormPath(request.url), request.query as RequestQuery)
    if (!fired) return
    const { fault, delayMs } = fired
    firedFaults.set(request, fault)
    api.metrics.faultsFired.inc({ effect: effectOf(fault) })
    if (delayMs > 0) await sleep(delayMs, undefined, { signal: stopping.signal }).catch(() => undefined)
    // The client gave up during the delay: the request is not served. Were it served, its writes would land after
    // whatever the test did next, a reset included.
    if (request.raw.socket.destroyed) {
      leaveUnanswered(request, reply)
      return
    }
    if (fault.drop) {
      await record(kit, request, reply, null)
      // Nothing is answered: the client sees the connection close, as after a network failure.
      reply.hijack()
      request.raw.socket.destroy()
      return
    }
    if (fault.drop_answer) answersDropped.add(request)
    if (fault.status !== null) throw faultError(fault, reply, api.config.rateLimitPerSecond)
  })

  api.addHook('preSerialization', async (request, _reply, payload) => {
    const importId = (payload as { import_id?: unknown } | null)?.import_id
    if (typeof importId === 'string') importIds.set(request, importId)
    return payload
  })

  api.addHook('onResponse', async (request, reply) => {
    await record(kit, request, reply, reply.statusCode)
  })
}

/**
 * Ends a request whose client left before it was served (during a fault's delay, or while it waited for its turn:
 * `src/routes/fair-reads.ts`): nothing more of it runs, and its company's journal keeps it, status null.
 */
export function leaveUnanswered(request: FastifyRequest, reply: FastifyReply): void {
  const kit = request.server.testKit
  if (kit) keepUnanswered(kit, request, reply)
  reply.hijack()
}

/** Keeps a request no answer reached, status null (its close comes outside any hook, so a failure is only logged). */
function keepUnanswered(kit: TestKit, request: FastifyRequest, reply: FastifyReply): void {
  record(kit, request, reply, null).catch((error: unknown) =>
    request.log.warn({ err: error }, 'request journal: a request no answer reached was not kept'),
  )
}

/** Writes the request to its company's journal; a request without a valid key belongs to no company and is not kept. */
async function record(kit: TestKit, request: FastifyRequest, reply: FastifyReply, status: number | null): Promise<void> {
  if (recorded.has(request)) return
  recorded.add(request)
  const outcome = await authenticationOf(request)
  if (outcome instanceof Error) return
  const duration = reply.elapsedTime
  const arrival = arrivals.get(request)
  const entry = {
    method: request.method,
    path: await pathOfRecorded(request),
    query: await queryOf(request),
    status,
    duration_ms: Math.round(duration * 1000) / 1000,
    request_id: request.id,
    import_id: importIds.get(request) ?? null,
    fault_id: firedFaults.get(request)?.id ?? null,
    at: new Date(arrival?.at ?? request.server.clock.now().getTime() - duration).toISOString(),
  }
  kit.journal.record(outcome.company.id, entry, arrival?.order ?? kit.journal.arrived())
}

/** The path as sent, each segment that is an API key (`isSecret`) redacted. */
async function pathOfRecorded(request: FastifyRequest): Promise<string> {
  const segments = originFormPath(request.url).split('/')
  return (await Promise.all(segments.map(async (segment) => ((await isSecret(request, segment)) ? REDACTED : segment)))).join('/')
}

/**
 * A value of the request that is a secret: one it carries (`carriesSecret`: an API key, its own or of the service's
 * form, or the admin token where a client put it), or the secret of any key of the service.
 */
async function isSecret(request: FastifyRequest, value: string): Promise<boolean> {
  return carriesSecret(value, secretsOf(request, request.server.config.adminToken)) || (await isKeySecret(request.server.store, value))
}

/**
 * The query as sent: each parameter once, a repeated one as an array of its values, API keys redacted: a name or
 * value that carries one (`carriesSecret`), or that is the secret of any key of the service. The first
 * MAX_RECORDED_QUERY_VALUES values only: an entry stays small, and its redaction cheap, whatever a URL repeats.
 */
async function queryOf(request: FastifyRequest): Promise<Record<string, string | string[]>> {
  const search = request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : ''
  const values = new Map<string, string[]>()
  let kept = 0
  for (const [sentName, raw] of new URLSearchParams(search)) {
    if (kept++ === MAX_RECORDED_QUERY_VALUES) break
    // A client may send its key as a name (`?cak_…=1`): such a name is kept `[Redacted]`, its value too.
    const secretName = await isSecret(request, sentName)
    const name = secretName ? REDACTED : sentName
    const value = secretName || (await isSecret(request, raw)) ? REDACTED : raw
    const named = values.get(name)
    if (named) named.push(value)
    else values.set(name, [value])
  }
  return Object.fromEntries([...values].map(([name, list]) => [name, list.length === 1 ? list[0] : list]))
}

/** What a fault did, as its metric counts it: the status it answered, `drop`, `drop_answer`, or `delay`. */
function effectOf(fault: Fault): string {
  if (fault.drop) return 'drop'
  if (fault.drop_answer) return 'drop_answer'
  return fault.status === null ? 'delay' : String(fault.status)
}

/** The error a fault's status is answered with: the body the specification (or this service) gives that status. */
function faultError(fault: Fault, reply: FastifyReply, limitPerSecond: number): Error {
  const message = `Injected fault ${fault.id} (set with POST /admin/companies/{id}/faults)`
  switch (fault.status) {
    case 400:
      return new ValidationError({ resource: 'request', description: message })
    case 401:
      return new UnauthorizedError(message)
    case 403:
      return new ForbiddenError(message)
    case 404:
      return new NotFoundError('route', message)
    case 429: {
      const seconds = fault.retry_after ?? 1
      // As the rate limit answers: its headers, with nothing left until the window the client is told to wait for.
      reply.header('ratelimit-limit', limitPerSecond).header('ratelimit-remaining', 0).header('ratelimit-reset', seconds)
      return new TooManyRequestsError(message, seconds)
    }
    case 500:
      return new SimulatedServerError(message)
    default:
      return new ServiceUnavailableError(message, fault.retry_after ?? undefined)
  }
}
