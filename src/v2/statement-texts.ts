import { createHash } from 'node:crypto'
import type { CustomMetric, Statement } from '../store/model.ts'
import { type StatementRowFields, type Store, StoreBusyError, StoreUnconfirmedError } from '../store/port.ts'
import { structureColumns } from './fields.ts'
import { statementRenderer } from './rows.ts'

/**
 * v2 statement rows as JSON text, rendered ahead of reads (why: docs/decisions.md, "Statement rows are rendered
 * ahead of reads"). A row depends only on the statement, on the custom metrics its structure shows (their keys
 * and kinds, an enum's values, in order) and on its user's email. So the row is rendered when statements are
 * written or the configuration changes (`renderStatements`), and stored with the statement under a key that names
 * the metrics it was rendered for; the store drops it when the statement is written again (no writer changes an
 * email).
 *
 * A page uses the stored row only when its key is the structure's, and renders every other row as it reads it,
 * with the same function: a rendering made for another configuration, or for the statement before it was written
 * again, is never served. Renderings only make pages faster.
 */

/** Change it when the rendering of statement rows changes: renderings made by older code then no longer match. */
const RENDERING_VERSION = 4

/** Statements rendered per transaction. */
const RENDERING_BATCH = 2000

const COMMA = ','.charCodeAt(0)

export interface StatementTexts {
  /** The key of renderings made for these metric columns. */
  key: string
  /** A statement's row as JSON text, its user's email being `email` (null for a user that does not exist). */
  row(statement: StatementRowFields, email: string | null): string
}

/** How rows of a statement structure showing these metrics are rendered, and the key of those renderings. */
export function statementTexts(metrics: readonly CustomMetric[]): StatementTexts {
  const render = statementRenderer(metrics)
  const shown = metrics.map((metric) => [metric.api_key, metric.kind, metric.kind === 'enum' ? metric.enum_values : null])
  return {
    key: createHash('sha256')
      .update(JSON.stringify([RENDERING_VERSION, shown]))
      .digest('hex')
      .slice(0, 16),
    row: (statement, email) => JSON.stringify(render(statement, email)),
  }
}

/**
 * A page of rows already JSON text, as UTF-8 JSON: exactly what `JSON.stringify({data, meta})` gives for the
 * row objects. Each row is written straight into one buffer: joining the rows into a string first, then
 * encoding it, costs more (the figures: docs/performance.md).
 */
export function pageBytes(rows: readonly string[], meta: string): Buffer {
  const head = '{"data":['
  const tail = `],"meta":${meta}}`
  let units = head.length + rows.length + tail.length
  for (const row of rows) units += row.length
  // UTF-8 takes at most three bytes for each UTF-16 code unit.
  const bytes = Buffer.allocUnsafe(units * 3)
  let length = bytes.write(head)
  rows.forEach((row, index) => {
    if (index > 0) length = bytes.writeUInt8(COMMA, length)
    length += bytes.write(row, length)
  })
  length += bytes.write(tail, length)
  return bytes.subarray(0, length)
}

/** How the rows of the company's first live statement structure are rendered; null when it has none. */
async function renderedStructureTexts(store: Store, companyId: string): Promise<StatementTexts | null> {
  const structure = (await store.structures.list(companyId)).find(
    (item) => item.environment === 'live' && item.type === 'statement_reporting',
  )
  return structure ? statementTexts((await structureColumns(store, structure)).metrics) : null
}

/**
 * Renders these statements again, as they were just written (a write drops a statement's rendering): what every
 * writer of statements calls, in the transaction that wrote them (recalculation, admin edits).
 */
export async function renderStatementRows(store: Store, companyId: string, statements: readonly Statement[]): Promise<void> {
  const live = statements.filter((statement) => statement.environment === 'live')
  if (live.length === 0) return
  const texts = await renderedStructureTexts(store, companyId)
  if (!texts) return
  await storeRenderings(store, companyId, texts, live)
}

/** Renders these live statements with `texts`, their users' emails read through `store`, and stores the renderings. */
async function storeRenderings(
  store: Store,
  companyId: string,
  texts: StatementTexts,
  statements: readonly StatementRowFields[],
): Promise<void> {
  const users = await store.users.getMany(
    companyId,
    statements.map((statement) => statement.user_id),
  )
  const renderings = statements.map((statement) => ({
    id: statement.id,
    key: texts.key,
    text: texts.row(statement, users.get(statement.user_id)?.email ?? null),
  }))
  await store.statements.saveRenderings(companyId, 'live', renderings)
}

/**
 * `renderStatements` after a commit that made renderings due (a load, a reset, an edit of a structure or metric):
 * the commit stands whatever happens here, and its call succeeded. A store that cannot write for now (busy, its
 * disk full, or MongoDB out of reach before it confirmed a batch) leaves statements unrendered, which a read of them
 * renders as it goes: the same answer, later.
 */
export async function renderStatementsAhead(store: Store, companyId: string): Promise<void> {
  try {
    await renderStatements(store, companyId)
  } catch (error) {
    if (!(error instanceof StoreBusyError || error instanceof StoreUnconfirmedError)) throw error
  }
}

/**
 * Renders the company's live statements that hold no rendering for its first live statement structure (a
 * company usually has one; pages of any other structure are rendered as they are read) and stores them. Each
 * batch is read, rendered and stored in one transaction that names the company, so a statement or user written
 * meanwhile, by this process or another, never gets a rendering of what it was before. Returns how many
 * statements it rendered.
 */
export async function renderStatements(store: Store, companyId: string): Promise<number> {
  const texts = await renderedStructureTexts(store, companyId)
  if (!texts) return 0
  // Nothing to render, as at most starts (`renderWhatIsStale`): told by a read, without the write lock (SQLite) or the
  // company's lock document (MongoDB) that each batch's transaction takes.
  if ((await store.statements.pageToRender(companyId, 'live', texts.key, null, 1)).length === 0) return 0
  let rendered = 0
  let afterId: string | null = null
  for (;;) {
    const after = afterId
    const batch = await store.transaction(
      async (tx) => {
        const statements = await tx.statements.pageToRender(companyId, 'live', texts.key, after, RENDERING_BATCH)
        await storeRenderings(tx, companyId, texts, statements)
        return statements
      },
      { company: companyId },
    )
    rendered += batch.length
    if (batch.length < RENDERING_BATCH) return rendered
    afterId = batch[batch.length - 1].id
  }
}
