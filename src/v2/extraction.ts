import { rowsPath } from '../reporting/structures.ts'
import type { RowWindow, Store } from '../store/port.ts'
import { structureColumns } from './fields.ts'
import { liveQuota, liveStructure } from './lookup.ts'
import {
  cutPage,
  DEFAULT_QUOTA_PAGE_LIMIT,
  DEFAULT_ROW_PAGE_LIMIT,
  type PageMeta,
  type PageQuery,
  type PageRequest,
  pageRequest,
} from './pages.ts'
import { type Emails, quotaValueRenderer, recordRenderer } from './rows.ts'
import type { QuotaValueRow } from './schemas.ts'
import { KEPT_PAGE_ROWS, type VersionedAnswers } from '../reporting/versioned-answers.ts'
import type { PageReadAhead } from './read-ahead.ts'
import { pageBytes, statementTexts } from './statement-texts.ts'

/**
 * The three v2 row endpoints. Each page reads `limit + 1` rows by id after `start_id` (an index seek, never an
 * offset), resolves the emails of the users it names in one read, and renders the rows; a statement page takes
 * the rows its statements hold rendered, and does that only for the others.
 */

/** The emails of the users the rows name, in one read. */
async function emailsOf(store: Store, companyId: string, rows: ReadonlyArray<{ user_id: string }>): Promise<Emails> {
  const users = await store.users.getMany(companyId, [...new Set(rows.map((row) => row.user_id))])
  const emails = new Map<string, string>()
  for (const [id, user] of users) emails.set(id, user.email)
  return emails
}

/** A page of rows of one kind. */
interface RowsPage<R> {
  data: R[]
  meta: PageMeta
}

async function renderPage<Stored extends { id: string; user_id: string }, R>(
  store: Store,
  companyId: string,
  request: PageRequest,
  stored: Stored[],
  render: (row: Stored, emails: Emails) => R,
  rowsUrl: string,
): Promise<RowsPage<R>> {
  const page = cutPage(request, stored, rowsUrl)
  const emails = await emailsOf(store, companyId, page.rows)
  return { data: page.rows.map((row) => render(row, emails)), meta: page.meta }
}

/** A page as its route sends it: its JSON bytes, and the window of the page after it (null on the last page). */
export interface PageBytes {
  bytes: Buffer
  nextWindow: RowWindow | null
}

/** A page answered: its bytes, whether they were read ahead, and what reads the next page ahead (call it once this one is sent). */
export interface AnsweredPage {
  bytes: Buffer
  readAhead: boolean
  readNext: () => void
}

/**
 * Where pages are kept: the next page of a walk, read ahead; and small pages answered, to answer again while the
 * store's data version holds (a poll asking for the same first page, versioned-answers.ts).
 */
export interface KeptPages {
  readAhead: PageReadAhead<PageBytes>
  answered: VersionedAnswers<PageBytes>
}

/** What a page depends on besides the store's data and its window: the endpoint, the company, the structure, the URLs' base. */
interface PageSource {
  endpoint: 'statements' | 'records'
  companyId: string
  tableId: string
  baseUrl: string
}

/**
 * Answers a page from `kept.readAhead` when it holds it at the store's current version, else with `read` (a small
 * page through `kept.answered`); the next page is read ahead, with `read` too, when the caller calls `readNext`
 * (read-ahead.ts).
 */
async function answerPage(
  store: Store,
  { readAhead, answered }: KeptPages,
  source: PageSource,
  request: PageRequest,
  read: (request: PageRequest) => Promise<PageBytes>,
): Promise<AnsweredPage> {
  const keyOf = (window: RowWindow) => readAheadKey(source, request.carried, window)
  const key = keyOf(request.window)
  // One read of the version for both places a page may be kept in: it is a query of its own.
  const version = await store.dataVersion()
  const kept = await readAhead.take(key, version)
  const readNow = () => read(request)
  const page = kept ?? (await (request.window.limit <= KEPT_PAGE_ROWS ? answered.answerAt(version, key, readNow) : readNow()))
  const { nextWindow } = page
  const readNext = () => {
    if (!nextWindow || page.bytes.length > readAhead.maxPageBytes) return
    const next = { ...request, window: nextWindow }
    void readAhead.readAhead(
      keyOf(nextWindow),
      () => store.dataVersion(),
      () => read(next),
    )
  }
  return { bytes: page.bytes, readAhead: kept !== null, readNext }
}

/**
 * A page's key: what it is read from, where it starts, and what its `next_url` carries (`carried`: the limit and the
 * filters as the request wrote them, from which its window's bounds follow; two requests of one window may write
 * them differently, as `…00.0005Z` and `…00Z`, and each gets its own `next_url`).
 */
function readAheadKey({ endpoint, companyId, tableId, baseUrl }: PageSource, carried: string, { afterId }: RowWindow): string {
  return [endpoint, companyId, tableId, afterId ?? '', baseUrl, carried].join('\u0000')
}

/** The window of the page after the one `meta` describes. */
function nextWindowOf(request: PageRequest, meta: PageMeta): RowWindow | null {
  return meta.next_start_id === null ? null : { ...request.window, afterId: meta.next_start_id }
}

/**
 * A page of `GET /v2/reporting/{table_id}/statements` or `/records`, read ahead (`answerPage`). Date bounds are
 * exclusive.
 */
export function reportingPage(
  endpoint: PageSource['endpoint'],
  store: Store,
  companyId: string,
  tableId: string,
  query: PageQuery,
  baseUrl: string,
  kept: KeptPages,
): Promise<AnsweredPage> {
  const request = pageRequest(query, 'exclusive', DEFAULT_ROW_PAGE_LIMIT)
  const read = endpoint === 'statements' ? readStatementPage : readRecordPage
  return answerPage(store, kept, { endpoint, companyId, tableId, baseUrl }, request, (asked) =>
    read(store, companyId, tableId, asked, baseUrl),
  )
}

/** Statements: each row as its statement holds it rendered for the structure, or rendered now (statement-texts.ts). */
async function readStatementPage(
  store: Store,
  companyId: string,
  tableId: string,
  request: PageRequest,
  baseUrl: string,
): Promise<PageBytes> {
  const structure = await liveStructure(store, companyId, tableId, 'statement_reporting')
  const texts = statementTexts((await structureColumns(store, structure)).metrics)
  const stored = await store.statements.pageForExtraction(companyId, 'live', request.window, texts.key)
  const page = cutPage(request, stored, baseUrl + rowsPath(structure.type, structure.id))
  const unrendered = page.rows.filter((row) => row.rendering === null)
  const emails = unrendered.length > 0 ? await emailsOf(store, companyId, unrendered) : new Map<string, string>()
  const rows = page.rows.map((row) => (row.rendering === null ? texts.row(row, emails.get(row.user_id) ?? null) : row.rendering))
  return { bytes: pageBytes(rows, JSON.stringify(page.meta)), nextWindow: nextWindowOf(request, page.meta) }
}

/** Records: the commission lines of the structure's data table, rendered now. */
async function readRecordPage(store: Store, companyId: string, tableId: string, request: PageRequest, baseUrl: string): Promise<PageBytes> {
  const structure = await liveStructure(store, companyId, tableId, 'record_reporting')
  const [columns, stored] = await Promise.all([
    structureColumns(store, structure),
    structure.data_table_id ? store.commissionLines.page(companyId, structure.data_table_id, request.window) : Promise.resolve([]),
  ])
  const rowsUrl = baseUrl + rowsPath(structure.type, structure.id)
  const page = await renderPage(store, companyId, request, stored, recordRenderer(columns.fields, columns.metrics), rowsUrl)
  return { bytes: Buffer.from(JSON.stringify(page)), nextWindow: nextWindowOf(request, page.meta) }
}

/** `GET /v2/quotas/{quota_id}/values`. Date bounds are inclusive (the specification). */
export async function quotaValuePage(
  store: Store,
  companyId: string,
  quotaId: string,
  query: PageQuery,
  baseUrl: string,
): Promise<RowsPage<QuotaValueRow>> {
  const request = pageRequest(query, 'inclusive', DEFAULT_QUOTA_PAGE_LIMIT)
  const quota = await liveQuota(store, companyId, quotaId)
  const stored = await store.quotaValues.page(companyId, quota.id, request.window)
  return renderPage(store, companyId, request, stored, quotaValueRenderer(quota), baseUrl + rowsPath('quota', quota.id))
}
