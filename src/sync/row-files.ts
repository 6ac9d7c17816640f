import { createReadStream, existsSync, linkSync, renameSync, rmSync } from 'node:fs'
import { type FileHandle, open } from 'node:fs/promises'
import { parse } from 'csv-parse'
import { stringify } from 'csv-stringify/sync'
import type { FieldSchema, Row } from '../client/index.ts'
import { writeFully } from '../durable-files.ts'
import type { SyncFormat } from './state.ts'

/**
 * The files of a structure. A run appends its pages to a partial file (NDJSON, one row a line, as served);
 * committing it writes the structure's file in its format: the partial file itself (a full run), or the
 * file with the changed rows replaced and the new ones appended (an incremental run, merged by `standard.id`).
 * Every commit writes a temporary file and renames it, and leaves the partial file: it can be done again.
 */

const ID = 'standard.id'

export const fileOf = (id: string, format: SyncFormat) => `${id}.${format}`
export const partialFileOf = (id: string) => `${id}.partial.ndjson`

/**
 * The CSV columns of a schema: one per field, and one per property of an object field (`standard.user.id`,
 * `standard.total_commission.value`...).
 */
export function columnsOf(schema: FieldSchema): string[] {
  return schema.fields.flatMap((field) =>
    field.type === 'object' && field.properties
      ? Object.keys(field.properties).map((property) => `${field.api_key}.${property}`)
      : [field.api_key],
  )
}

function cellOf(row: Row, column: string): string {
  let value: unknown = row[column]
  if (!(column in row)) {
    const dot = column.lastIndexOf('.')
    const parent = row[column.slice(0, dot)]
    value = parent && typeof parent === 'object' ? (parent as Record<string, unknown>)[column.slice(dot + 1)] : undefined
  }
  if (value === null || value === undefined) return ''
  return typeof value === 'object' ? JSON.stringify(value) : String(value)
}

/** Appends rows to the partial file and makes them durable; returns the file's size after. */
export async function appendRows(path: string, rows: Row[]): Promise<number> {
  const handle = await open(path, 'a')
  try {
    if (rows.length > 0) await writeFully(handle, rows.map((row) => `${JSON.stringify(row)}\n`).join(''))
    await handle.datasync()
    return (await handle.stat()).size
  } finally {
    await handle.close()
  }
}

/** Cuts the partial file back to the bytes its saved pages cover (what a killed run wrote after them goes). */
export async function truncateTo(path: string, bytes: number): Promise<void> {
  const handle = await open(path, 'a+')
  try {
    await handle.truncate(bytes)
  } finally {
    await handle.close()
  }
}

/**
 * The lines of an NDJSON file, split at "\n" alone: JSON.stringify leaves U+2028 and U+2029 unescaped inside
 * strings, and readline would end a line at each of them too.
 */
async function* ndjsonLines(path: string): AsyncGenerator<string> {
  if (!existsSync(path)) return
  // The pieces of a line begun in earlier chunks, joined once its "\n" comes: a line of many chunks is copied once.
  let pending: string[] = []
  for await (const chunk of createReadStream(path, 'utf8') as AsyncIterable<string>) {
    let start = 0
    for (let end = chunk.indexOf('\n'); end !== -1; end = chunk.indexOf('\n', start)) {
      pending.push(chunk.slice(start, end))
      const line = withoutCarriageReturn(pending.join(''))
      pending = []
      start = end + 1
      if (line !== '') yield line
    }
    if (start < chunk.length) pending.push(chunk.slice(start))
  }
  const last = withoutCarriageReturn(pending.join(''))
  if (last !== '') yield last
}

/** A line as a file edited on Windows ends it. */
const withoutCarriageReturn = (line: string) => (line.endsWith('\r') ? line.slice(0, -1) : line)

/**
 * Writes a file through a temporary one, renamed over it once complete. One that fails (a full disk) is removed, so
 * as not to hold the room that others need.
 */
async function replaceFile(path: string, write: (out: FileHandle) => Promise<void>): Promise<void> {
  const temporary = `${path}.tmp`
  const out = await open(temporary, 'w')
  try {
    await write(out)
    await out.datasync()
  } catch (error) {
    rmSync(temporary, { force: true })
    throw error
  } finally {
    await out.close()
  }
  renameSync(temporary, path)
}

/** Buffers small writes into larger ones. */
function batcher(out: FileHandle) {
  let buffered = ''
  return {
    async add(text: string) {
      buffered += text
      if (buffered.length >= 1 << 20) await this.flush()
    },
    async flush() {
      if (buffered !== '') await writeFully(out, buffered)
      buffered = ''
    },
  }
}

/** A full run: the partial file becomes the structure's file. Returns its row count. */
export async function commitReplace(partial: string, final: string, format: SyncFormat, columns: string[], rows: number): Promise<number> {
  if (format === 'ndjson') {
    rmSync(`${final}.tmp`, { force: true })
    linkSync(partial, `${final}.tmp`)
    renameSync(`${final}.tmp`, final)
    return rows
  }
  let count = 0
  await replaceFile(final, async (out) => {
    const writer = batcher(out)
    await writer.add(stringify([columns]))
    for await (const line of ndjsonLines(partial)) {
      await writer.add(stringify([columns.map((column) => cellOf(JSON.parse(line) as Row, column))]))
      count++
    }
    await writer.flush()
  })
  return count
}

/**
 * An incremental run: each row of the file whose `standard.id` the partial file holds is replaced by the new
 * version, in place; the other new rows are appended in the order read. Returns the file's row count.
 */
export async function commitMerge(partial: string, final: string, format: SyncFormat, columns: string[]): Promise<number> {
  const changed = new Map<string, Row>()
  for await (const line of ndjsonLines(partial)) {
    const row = JSON.parse(line) as Row
    changed.set(String(row[ID]), row)
  }
  const render = (row: Row) =>
    format === 'ndjson' ? `${JSON.stringify(row)}\n` : stringify([columns.map((column) => cellOf(row, column))])
  let count = 0
  await replaceFile(final, async (out) => {
    const writer = batcher(out)
    for await (const { id, text } of existingRows(final, format, columns)) {
      const row = id === null ? undefined : changed.get(id)
      await writer.add(row ? render(row) : text)
      if (row) changed.delete(id!)
      if (id !== null) count++
    }
    for (const row of changed.values()) {
      await writer.add(render(row))
      count++
    }
    await writer.flush()
  })
  return count
}

/** The rows of a structure's file as written, each with its id (null for the CSV header, kept as it is). */
async function* existingRows(path: string, format: SyncFormat, columns: string[]): AsyncGenerator<{ id: string | null; text: string }> {
  if (format === 'ndjson') {
    for await (const line of ndjsonLines(path)) yield { id: String((JSON.parse(line) as Row)[ID]), text: `${line}\n` }
    return
  }
  if (!existsSync(path)) {
    yield { id: null, text: stringify([columns]) }
    return
  }
  let idColumn = -1
  for await (const record of createReadStream(path).pipe(parse({ relax_column_count: true })) as AsyncIterable<string[]>) {
    if (idColumn === -1) {
      idColumn = record.indexOf(ID)
      yield { id: null, text: stringify([record]) }
      continue
    }
    yield { id: record[idColumn], text: stringify([record]) }
  }
}
