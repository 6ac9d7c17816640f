import { createHash } from 'node:crypto'
import type { CustomMetric } from '../store/model.ts'
import type { ExtractedStatement, Store } from '../store/port.ts'
import { structureColumns } from './fields.ts'
import { statementRowRest } from './rows.ts'

/**
 * v2 statement rows as JSON text, rendered ahead of reads. Rendering is most of what a statement page costs
 * (docs/performance.md), and a row is `{"standard.id":…,"standard.user":{…}` followed by a rest that depends only
 * on the statement and on the custom metrics its structure shows (their keys and kinds, in order), never on a
 * user's email. So that rest is rendered when statements are written or the configuration changes
 * (`renderStatements`), and stored with the statement under a key that names what it was rendered for.
 *
 * A page uses the stored rest of a row only when its key is the structure's, and renders every other row as it
 * reads it, with the same function: a rendering made for another configuration, or for the statement before it
 * was written again (which drops its rendering), is never served. Renderings only make pages faster.
 */

/** Change it when the rendering of statement rows changes: renderings made by older code then no longer match. */
const RENDERING_VERSION = 2

/** Statements rendered per transaction. */
const RENDERING_BATCH = 2000

export interface StatementTexts {
  /** The key of renderings made for these metric columns. */
  key: string
  /** The text of a statement row after its user reference, closing brace included: `,"standard.date":…}`. */
  rest(statement: ExtractedStatement): string
}

/** How rows of a statement structure showing these metrics are rendered, and the key of those renderings. */
export function statementTexts(metrics: readonly CustomMetric[]): StatementTexts {
  const render = statementRowRest(metrics)
  const shown = metrics.map((metric) => [metric.api_key, metric.kind])
  return {
    key: createHash('sha256').update(JSON.stringify([RENDERING_VERSION, shown])).digest('hex').slice(0, 16),
    // The rest always holds the three standard fields, so its object text is never `{}`.
    rest: (statement) => `,${JSON.stringify(render(statement)).slice(1)}`,
  }
}

/** A statement row as text: its id, the JSON text of its user reference, and the rest (`StatementTexts.rest`). */
export interface StatementRowText {
  id: string
  reference: string
  rest: string
}

/**
 * A page of statement rows as UTF-8 JSON: exactly what `JSON.stringify({data, meta})` gives for the row objects,
 * whose keys come in the field schema's order. Written piece by piece into one buffer: joining the pieces into a
 * string first, then encoding it, costs half as much again (docs/performance.md).
 */
export function statementPageBytes(rows: readonly StatementRowText[], meta: string): Buffer {
  const pieces: string[] = ['{"data":[']
  rows.forEach((row, index) => {
    pieces.push(index === 0 ? '{"standard.id":' : ',{"standard.id":', JSON.stringify(row.id), ',"standard.user":', row.reference, row.rest)
  })
  pieces.push('],"meta":', meta, '}')
  let units = 0
  for (const piece of pieces) units += piece.length
  // UTF-8 takes at most three bytes for each UTF-16 code unit.
  const bytes = Buffer.allocUnsafe(units * 3)
  let length = 0
  for (const piece of pieces) length += bytes.write(piece, length)
  return bytes.subarray(0, length)
}

/**
 * Renders the company's live statements that hold no rendering for its first live statement structure (a
 * company usually has one; pages of any other structure are rendered as they are read) and stores them. Each
 * batch is read, rendered and stored in one transaction, so a statement written meanwhile never gets a
 * rendering of what it was before. Returns how many statements it rendered.
 */
export async function renderStatements(store: Store, companyId: string): Promise<number> {
  const structure = (await store.structures.list(companyId)).find((item) => item.environment === 'live' && item.type === 'statement_reporting')
  if (!structure) return 0
  const texts = statementTexts((await structureColumns(store, structure)).metrics)
  let rendered = 0
  let afterId: string | null = null
  for (;;) {
    const after = afterId
    const batch = await store.transaction(async (tx) => {
      const statements = await tx.statements.pageToRender(companyId, 'live', texts.key, after, RENDERING_BATCH)
      await tx.statements.saveRenderings(
        companyId,
        'live',
        statements.map((statement) => ({ id: statement.id, key: texts.key, text: texts.rest(statement) })),
      )
      return statements
    })
    rendered += batch.length
    if (batch.length < RENDERING_BATCH) return rendered
    afterId = batch[batch.length - 1].id
  }
}
