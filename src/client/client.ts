import { ImportTimeoutError, UnexpectedAnswerError } from './errors.ts'
import { type ApiRequest, pause, Transport, type TransportOptions } from './transport.ts'
import type {
  ArchiveItem,
  AttributionReceipt,
  CallOptions,
  DataStructureList,
  DataStructureType,
  FieldSchema,
  GroupAttribution,
  ImportReceipt,
  ImportRecord,
  ImportView,
  ManagerAttribution,
  OffsetPage,
  OffsetQuery,
  Page,
  PageQuery,
  QuotaValueRow,
  RecordRow,
  Row,
  StatementRow,
  TableRecord,
  TableUpsertOptions,
  UpsertOptions,
  User,
  UserPayload,
  V1RecordRow,
  V1StatementRow,
} from './types.ts'

export interface ClientOptions extends TransportOptions {
  /**
   * How far behind the `Date` it answers the service may have stamped a change not visible yet (clocks of several
   * instances, the second the header rounds down to, and an import's recalculation, whose rows are stamped before
   * their transaction commits): a high-water mark is moved back by it, so that no change falls between two syncs.
   * Rows changed in that margin are read twice, which a merge by `standard.id` absorbs. Default DEFAULT_CLOCK_SKEW_MS.
   */
  clockSkewMs?: number
}

/**
 * The default `clockSkewMs`: 5 s. A second covers the clocks and the header's rounding; the rest, the time between
 * the stamp of an import's calculated rows and its commit (up to about 2.5 s measured for 50,000 new deals).
 */
export const DEFAULT_CLOCK_SKEW_MS = 5000

/** The longest delay a Node timer holds (2³¹ − 1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1

/** A structure to read rows from: a discovery entry, or its id and type. */
export interface StructureRef {
  id: string
  type: DataStructureType
}

export interface WaitOptions extends CallOptions {
  /** Give up (ImportTimeoutError) after this long (default 60 s). */
  timeoutMs?: number
  /** The first pause between two reads; it doubles up to `maxIntervalMs` (defaults 250 ms and 5 s). */
  intervalMs?: number
  maxIntervalMs?: number
}

/** Rows changed after an instant, read page by page, and the mark to give the next sync. */
export interface Changes {
  /** The instant to pass as `since` next time: taken from the service's clock before the first page was read. */
  highWaterMark: string
  /** The structure's field schema, read at the same moment. */
  schema: FieldSchema
  pages: AsyncGenerator<Page<Row>>
}

const INSTANT_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i

/**
 * A client of the commission interface, v1 and v2, for any base URL (this service or the real one). One
 * method per route; iterators that walk every page; `syncSince` for incremental extraction; `waitForImport`
 * for asynchronous upserts. Error answers throw the typed errors of `./errors.ts`.
 */
export class CommissionClient {
  readonly transport: Transport
  readonly #clockSkewMs: number

  constructor(options: ClientOptions) {
    this.transport = new Transport(options)
    this.#clockSkewMs = options.clockSkewMs ?? DEFAULT_CLOCK_SKEW_MS
  }

  // v2: discovery, fields, one page of rows

  /** `GET /v2/data-structures`: the live structures (statement and record reporting, quotas). */
  async listDataStructures(options: CallOptions = {}): Promise<DataStructureList> {
    return this.#getList('/v2/data-structures', undefined, options)
  }

  /** `GET /v2/data-structures/{table_id}/fields`. */
  async getFields(tableId: string, options: CallOptions = {}): Promise<FieldSchema> {
    return this.#get(`/v2/data-structures/${segment(tableId)}/fields`, undefined, options)
  }

  /** `GET /v2/reporting/{table_id}/statements`: one page. */
  async getStatements(tableId: string, query: PageQuery = {}, options: CallOptions = {}): Promise<Page<StatementRow>> {
    return this.#getList(`/v2/reporting/${segment(tableId)}/statements`, pageParams(query), options)
  }

  /** `GET /v2/reporting/{table_id}/records`: one page. */
  async getRecords(tableId: string, query: PageQuery = {}, options: CallOptions = {}): Promise<Page<RecordRow>> {
    return this.#getList(`/v2/reporting/${segment(tableId)}/records`, pageParams(query), options)
  }

  /** `GET /v2/quotas/{quota_id}/values`: one page (date bounds inclusive). */
  async getQuotaValues(quotaId: string, query: PageQuery = {}, options: CallOptions = {}): Promise<Page<QuotaValueRow>> {
    return this.#getList(`/v2/quotas/${segment(quotaId)}/values`, pageParams(query), options)
  }

  // v1: lists, one page

  /** `GET /v1/users`. */
  async listUsers(query: OffsetQuery = {}, options: CallOptions = {}): Promise<OffsetPage<User>> {
    return this.#getList('/v1/users', offsetParams(query), options)
  }

  /** `GET /v1/tables/{data_table_key}/records`. */
  async listTableRecords(dataTableKey: string, query: OffsetQuery = {}, options: CallOptions = {}): Promise<OffsetPage<TableRecord>> {
    return this.#getList(`/v1/tables/${segment(dataTableKey)}/records`, offsetParams(query), options)
  }

  /** `GET /v1/reporting`. @deprecated by the service: use `getStatements`. */
  async listReportingStatements(query: OffsetQuery = {}, options: CallOptions = {}): Promise<OffsetPage<V1StatementRow>> {
    return this.#getList('/v1/reporting', offsetParams(query), options)
  }

  /** `GET /v1/reporting/{data_table_id}/records`. @deprecated by the service: use `getRecords`. */
  async listReportingRecords(dataTableId: string, query: OffsetQuery = {}, options: CallOptions = {}): Promise<OffsetPage<V1RecordRow>> {
    return this.#getList(`/v1/reporting/${segment(dataTableId)}/records`, offsetParams(query), options)
  }

  /** `GET /v1/imports/{import_id}`. */
  async getImport(importId: string, options: CallOptions = {}): Promise<ImportView> {
    return this.#get(`/v1/imports/${segment(importId)}`, undefined, options)
  }

  // v1: writes

  /** `PUT /v1/users/bulk` (at most 200 users): answers once the import is created, not applied. */
  async upsertUsers(users: UserPayload[], options: UpsertOptions = {}): Promise<ImportReceipt> {
    return this.#write({ method: 'PUT', path: '/v1/users/bulk', query: { debounce: options.debounce }, body: { data: users } }, options)
  }

  /** `PUT /v1/users/managers/bulk`: its own import, all or nothing. */
  async upsertManagers(items: ManagerAttribution[], options: CallOptions = {}): Promise<AttributionReceipt<ManagerAttribution>> {
    return this.#write({ method: 'PUT', path: '/v1/users/managers/bulk', body: { data: items } }, options)
  }

  /** `PUT /v1/users/groups/bulk`: its own import, all or nothing. */
  async upsertGroups(items: GroupAttribution[], options: CallOptions = {}): Promise<AttributionReceipt<GroupAttribution>> {
    return this.#write({ method: 'PUT', path: '/v1/users/groups/bulk', body: { data: items } }, options)
  }

  /** `POST /v1/tables/{data_table_key}/records/bulk`. */
  async upsertTableRecords(
    dataTableKey: string,
    records: Record<string, unknown>[],
    options: TableUpsertOptions = {},
  ): Promise<ImportReceipt> {
    return this.#write(
      {
        method: 'POST',
        path: `/v1/tables/${segment(dataTableKey)}/records/bulk`,
        query: { all: options.all, debounce: options.debounce, keep_overrides: options.keepOverrides },
        body: records,
      },
      options,
    )
  }

  /** `DELETE /v1/users/archive/bulk` (at most 50): synchronous, all or nothing. */
  async archiveUsers(items: ArchiveItem[], options: CallOptions = {}): Promise<{ message: string }> {
    return this.#write({ method: 'DELETE', path: '/v1/users/archive/bulk', body: { data: items } }, options)
  }

  // Walks

  /** Every page of a v2 structure, following `meta.next_url` until `has_more` is false. */
  async *pages(structure: StructureRef, query: PageQuery = {}, options: CallOptions = {}): AsyncGenerator<Page<Row>> {
    const path = rowsPathOf(structure)
    let next: Pick<ApiRequest, 'path' | 'query'> | null = { path, query: pageParams(query) }
    while (next) {
      const page: Page<Row> = await this.#getList(next.path, next.query, options)
      yield page
      next = page.meta.has_more ? this.#nextPageOf(path, page, next) : null
    }
  }

  /** Every row of a v2 structure (see `pages`). */
  async *rows(structure: StructureRef, query: PageQuery = {}, options: CallOptions = {}): AsyncGenerator<Row> {
    for await (const page of this.pages(structure, query, options)) yield* untilAborted(page.data, options.signal)
  }

  statements(tableId: string, query: PageQuery = {}, options: CallOptions = {}): AsyncGenerator<StatementRow> {
    return this.rows({ id: tableId, type: 'statement_reporting' }, query, options) as AsyncGenerator<StatementRow>
  }

  records(tableId: string, query: PageQuery = {}, options: CallOptions = {}): AsyncGenerator<RecordRow> {
    return this.rows({ id: tableId, type: 'record_reporting' }, query, options) as AsyncGenerator<RecordRow>
  }

  quotaValues(quotaId: string, query: PageQuery = {}, options: CallOptions = {}): AsyncGenerator<QuotaValueRow> {
    return this.rows({ id: quotaId, type: 'quota' }, query, options) as unknown as AsyncGenerator<QuotaValueRow>
  }

  /**
   * Every user, page by page through `offset`, as are the other v1 walks: not every row when the list changes
   * during the walk. A row deleted before the walk's position moves the later ones back by one, and one of them is
   * never read; a row deleted and made again is read twice. For every row once, walk while nothing is written, or
   * (statements, commission lines) the v2 walks, whose pages start after an id.
   */
  users(query: OffsetQuery = {}, options: CallOptions = {}): AsyncGenerator<User> {
    return this.#offsetRows('/v1/users', query, options)
  }

  /** Every record of a data table, through `offset`: see `users` on what a change during the walk does. */
  tableRecords(dataTableKey: string, query: OffsetQuery = {}, options: CallOptions = {}): AsyncGenerator<TableRecord> {
    return this.#offsetRows(`/v1/tables/${segment(dataTableKey)}/records`, query, options)
  }

  /** Through `offset` (see `users`). @deprecated by the service: use `statements`, whose walk no deletion shifts. */
  reportingStatements(query: OffsetQuery = {}, options: CallOptions = {}): AsyncGenerator<V1StatementRow> {
    return this.#offsetRows('/v1/reporting', query, options)
  }

  /** Through `offset` (see `users`). @deprecated by the service: use `records`, whose walk no deletion shifts. */
  reportingRecords(dataTableId: string, query: OffsetQuery = {}, options: CallOptions = {}): AsyncGenerator<V1RecordRow> {
    return this.#offsetRows(`/v1/reporting/${segment(dataTableId)}/records`, query, options)
  }

  /**
   * The rows of a structure changed after `since` (all rows when null), page by page, and the high-water
   * mark for the next call. The mark comes from the service's clock (`Date`) before the first page is read,
   * less `clockSkewMs`: a change made while the walk runs is either read now or after the mark.
   * `startId` resumes an interrupted walk after the last row it kept.
   */
  async changesSince(
    structure: StructureRef,
    since: Date | string | null,
    options: CallOptions & { limit?: number; startId?: string } = {},
  ): Promise<Changes> {
    const { signal } = options
    const answer = await this.transport.send<FieldSchema>({
      method: 'GET',
      path: `/v2/data-structures/${segment(structure.id)}/fields`,
      signal,
    })
    const serverNow = answer.date ?? new Date()
    return {
      highWaterMark: new Date(serverNow.getTime() - this.#clockSkewMs).toISOString(),
      schema: answer.body,
      pages: this.pages(
        structure,
        { limit: options.limit, start_id: options.startId, last_modified_after: since ?? undefined },
        { signal },
      ),
    }
  }

  /**
   * The rows of a structure changed after `since` (all rows when null), and the high-water mark to pass next time.
   * Rows removed since (a deal deleted takes its lines, an emptied cell its statement) are not among them: a full
   * read now and then, merged by `standard.id`, finds them gone.
   */
  async syncSince(
    structure: StructureRef,
    since: Date | string | null,
    options: CallOptions & { limit?: number } = {},
  ): Promise<{ rows: Row[]; highWaterMark: string }> {
    const changes = await this.changesSince(structure, since, options)
    const rows: Row[] = []
    for await (const page of changes.pages) rows.push(...page.data)
    return { rows, highWaterMark: changes.highWaterMark }
  }

  /**
   * Reads an import until it is finished, pausing longer each time; its `error` tells the outcome. `signal` ends the
   * wait with its reason; `timeoutMs` with ImportTimeoutError.
   */
  async waitForImport(importId: string, options: WaitOptions = {}): Promise<ImportRecord> {
    const timeoutMs = options.timeoutMs ?? 60_000
    // NaN (a variable left unset, read as a number) would poll every millisecond for good.
    if (Number.isNaN(timeoutMs)) throw new RangeError('waitForImport: timeoutMs is not a number')
    const deadline = Date.now() + timeoutMs
    // A read held up (a slow answer, a 429's wait) is abandoned at the deadline too. A timeout of 0 or less reads
    // once; one a timer cannot hold (over 2³¹ − 1 ms, or not finite) bounds nothing.
    const timeout = timeoutMs > 0 && timeoutMs <= MAX_TIMER_MS ? AbortSignal.timeout(Math.ceil(timeoutMs)) : undefined
    const signals = [timeout, options.signal].filter((signal) => signal !== undefined)
    const signal = signals.length > 0 ? AbortSignal.any(signals) : undefined
    let interval = options.intervalMs ?? 250
    let last: ImportRecord | null = null
    for (;;) {
      try {
        last = (await this.getImport(importId, { signal })).data_import
      } catch (error) {
        // The caller giving up is not a timeout: its reason, as every other call rejects with.
        options.signal?.throwIfAborted()
        if (timeout?.aborted) throw new ImportTimeoutError(importId, timeoutMs, last)
        throw error
      }
      if (last.status === 'finished') return last
      const remaining = deadline - Date.now()
      if (remaining <= 0) throw new ImportTimeoutError(importId, timeoutMs, last)
      await pause(Math.min(interval, remaining), options.signal)
      interval = Math.min(interval * 2, options.maxIntervalMs ?? 5_000)
    }
  }

  /** Closes the connections the client opened. */
  close(): Promise<void> {
    return this.transport.close()
  }

  async #get<Body>(path: string, query: ApiRequest['query'], { signal }: CallOptions): Promise<Body> {
    return (await this.transport.send<Body>({ method: 'GET', path, query, signal })).body
  }

  /** A GET of a list (v2 discovery and pages, v1 lists): its `data` is an array, or the answer is not the service's. */
  async #getList<Body extends { data: unknown[] }>(path: string, query: ApiRequest['query'], { signal }: CallOptions): Promise<Body> {
    const response = await this.transport.send<Body>({ method: 'GET', path, query, signal })
    if (!Array.isArray(response.body.data))
      throw new UnexpectedAnswerError(
        { method: 'GET', url: response.url, status: response.status, body: response.body, requestId: response.requestId },
        'a JSON object with a data array',
      )
    return response.body
  }

  async #write<Body>(request: ApiRequest, { signal }: CallOptions): Promise<Body> {
    return (await this.transport.send<Body>({ ...request, signal })).body
  }

  /**
   * The request of the page after `page`: its `next_url` when it points at the base URL's origin; otherwise
   * (a service that writes another public address) the same path with `next_url`'s query, or `start_id`.
   */
  #nextPageOf(path: string, page: Page<Row>, current: Pick<ApiRequest, 'path' | 'query'>): Pick<ApiRequest, 'path' | 'query'> {
    const { next_url: nextUrl, next_start_id: nextStartId } = page.meta
    if (nextUrl) return followedNextUrl(this.transport.baseUrl, path, nextUrl)
    if (!nextStartId) throw new TypeError(`${path}: has_more is true but the page gives neither next_url nor next_start_id`)
    const query = current.path === path ? { ...current.query } : {}
    return { path, query: { ...query, start_id: nextStartId } }
  }

  async *#offsetRows<R>(path: string, query: OffsetQuery, options: CallOptions): AsyncGenerator<R> {
    const limit = query.limit ?? 2000
    if (limit < 1) throw new RangeError('a walk needs a limit of at least 1')
    let offset = BigInt(query.offset ?? 0)
    for (;;) {
      const page: OffsetPage<R> = await this.#getList(path, { offset: offset.toString(), limit }, options)
      yield* untilAborted(page.data, options.signal)
      offset += BigInt(page.data.length)
      if (page.data.length === 0 || offset >= BigInt(page.count)) return
    }
  }
}

/**
 * A `next_url` as it is followed: itself on the base URL's origin; else its query on `path` there, since a service
 * behind a proxy or with PUBLIC_URL may name another origin, to which the key is not sent.
 */
export function followedNextUrl(baseUrl: URL, path: string, nextUrl: string): { path: string; query?: Record<string, string> } {
  const url = new URL(nextUrl, baseUrl)
  if (url.origin === baseUrl.origin) return { path: url.href }
  return { path, query: Object.fromEntries(url.searchParams) }
}

/** Where the rows of a structure are read. */
export function rowsPathOf({ id, type }: StructureRef): string {
  if (type === 'quota') return `/v2/quotas/${segment(id)}/values`
  return `/v2/reporting/${segment(id)}/${type === 'statement_reporting' ? 'statements' : 'records'}`
}

/** The rows of a page one by one, ending the walk as soon as the signal aborts, not only at the next request. */
function* untilAborted<R>(rows: R[], signal: AbortSignal | undefined): Generator<R> {
  for (const row of rows) {
    signal?.throwIfAborted()
    yield row
  }
}

function segment(value: string): string {
  return encodeURIComponent(value)
}

function pageParams(query: PageQuery): ApiRequest['query'] {
  return {
    start_id: query.start_id,
    limit: query.limit,
    last_modified_after: instantParam('last_modified_after', query.last_modified_after),
    last_modified_before: instantParam('last_modified_before', query.last_modified_before),
  }
}

function offsetParams(query: OffsetQuery): ApiRequest['query'] {
  return { offset: query.offset === undefined ? undefined : String(query.offset), limit: query.limit }
}

/**
 * An instant as the service should get it: with an explicit offset. A string without one is refused here,
 * since the service would read it in a zone of its choosing and shift the window.
 */
export function instantParam(name: string, value: Date | string | undefined): string | undefined {
  if (value === undefined) return undefined
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new RangeError(`${name}: invalid date`)
    return value.toISOString()
  }
  if (!INSTANT_WITH_OFFSET.test(value) || Number.isNaN(Date.parse(value))) {
    throw new RangeError(`${name}: expected an ISO 8601 date-time with an offset (Z or ±hh:mm), got ${JSON.stringify(value)}`)
  }
  return value
}
