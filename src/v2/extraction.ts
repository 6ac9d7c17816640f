import type { Store } from '../store/port.ts'
import { rowsPath } from './data-structures.ts'
import { structureColumns } from './fields.ts'
import { liveQuota, liveStructure } from './lookup.ts'
import { cutPage, type Page, type PageQuery, type PageRequest, pageRequest } from './pages.ts'
import { type Emails, quotaValueRenderer, recordRenderer, type Row, statementRenderer } from './rows.ts'

/**
 * The three v2 row endpoints. Each page reads `limit + 1` rows by id after `start_id` (an index seek, never an
 * offset), resolves the emails of the users it names in one read, and renders the rows.
 */

async function renderPage<Stored extends { id: string; user_id: string }>(
  store: Store,
  companyId: string,
  request: PageRequest,
  stored: Stored[],
  render: (row: Stored, emails: Emails) => Row,
  rowsUrl: string,
): Promise<Page<Row>> {
  const page = cutPage(request, stored, rowsUrl)
  const users = await store.users.getMany(companyId, [...new Set(page.rows.map((row) => row.user_id))])
  const emails = new Map<string, string>()
  for (const [id, user] of users) emails.set(id, user.email)
  return { data: page.rows.map((row) => render(row, emails)), meta: page.meta }
}

/** `GET /v2/reporting/{table_id}/statements`. Date bounds are exclusive. */
export async function statementPage(store: Store, companyId: string, tableId: string, query: PageQuery, baseUrl: string): Promise<Page<Row>> {
  const request = pageRequest(query, 'exclusive')
  const structure = await liveStructure(store, companyId, tableId, 'statement_reporting')
  const [columns, stored] = await Promise.all([
    structureColumns(store, structure),
    // Only the fields a row shows: a page reads 2,001 statements, and the rest would be read for nothing.
    store.statements.pageForExtraction(companyId, 'live', request.window),
  ])
  const rowsUrl = baseUrl + rowsPath(structure.type, structure.id)
  return renderPage(store, companyId, request, stored, statementRenderer(columns.metrics), rowsUrl)
}

/** `GET /v2/reporting/{table_id}/records`: the commission lines of the structure's data table. Date bounds are exclusive. */
export async function recordPage(store: Store, companyId: string, tableId: string, query: PageQuery, baseUrl: string): Promise<Page<Row>> {
  const request = pageRequest(query, 'exclusive')
  const structure = await liveStructure(store, companyId, tableId, 'record_reporting')
  const [columns, stored] = await Promise.all([
    structureColumns(store, structure),
    structure.data_table_id ? store.commissionLines.page(companyId, structure.data_table_id, request.window) : Promise.resolve([]),
  ])
  const rowsUrl = baseUrl + rowsPath(structure.type, structure.id)
  return renderPage(store, companyId, request, stored, recordRenderer(columns.fields, columns.metrics), rowsUrl)
}

/** `GET /v2/quotas/{quota_id}/values`. Date bounds are inclusive (the specification). */
export async function quotaValuePage(store: Store, companyId: string, quotaId: string, query: PageQuery, baseUrl: string): Promise<Page<Row>> {
  const request = pageRequest(query, 'inclusive')
  const quota = await liveQuota(store, companyId, quotaId)
  const stored = await store.quotaValues.page(companyId, quota.id, request.window)
  return renderPage(store, companyId, request, stored, quotaValueRenderer(quota), baseUrl + rowsPath('quota', quota.id))
}
