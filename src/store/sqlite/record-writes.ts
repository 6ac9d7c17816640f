import type { DataTableRecord } from '../model.ts'
import type { DataTableRecordRepository } from '../port.ts'
import type { Sql } from './connection.ts'

type RecordWrites = Pick<
  DataTableRecordRepository,
  'saveMany' | 'findByExternalIds' | 'deleteByExternalIds' | 'deleteAll' | 'listOverridden' | 'deleteUnoverridden'
>

/** SQLite's IN lists are bounded by the number of bound parameters: work in slices well below it. */
const SLICE = 500

export function slices<T>(values: readonly T[]): T[][] {
  const result: T[][] = []
  for (let start = 0; start < values.length; start += SLICE) result.push(values.slice(start, start + SLICE))
  return result
}

export const placeholders = (values: readonly unknown[]) => values.map(() => '?').join(', ')

/**
 * The data-table record operations the import engine needs, beside the basic ones of `sqlite-store.ts`.
 * Lookups by external id name their index: without statistics the planner would rather scan the table's
 * primary-key range, which grows with the table.
 */
export function sqliteRecordWrites(sql: Sql): RecordWrites {
  return {
    async saveMany(companyId, records) {
      await sql.write((db) => {
        for (const record of records) {
          db.run(
            `INSERT INTO data_table_records (company_id, table_id, id, external_id, doc) VALUES (?, ?, ?, ?, ?)
             ON CONFLICT (company_id, table_id, id) DO UPDATE SET external_id = excluded.external_id, doc = excluded.doc`,
            companyId,
            record.table_id,
            record.id,
            record.external_id,
            JSON.stringify(record.company_id === companyId ? record : { ...record, company_id: companyId }),
          )
        }
      })
    },

    async findByExternalIds(companyId, tableId, externalIds) {
      const found = new Map<string, DataTableRecord>()
      for (const slice of slices([...new Set(externalIds)])) {
        const rows = await sql.all(
          `SELECT doc FROM data_table_records INDEXED BY data_table_records_external
           WHERE company_id = ? AND table_id = ? AND external_id IN (${placeholders(slice)})`,
          companyId,
          tableId,
          ...slice,
        )
        for (const row of rows) {
          const record = JSON.parse(row.doc as string) as DataTableRecord
          found.set(record.external_id, record)
        }
      }
      return found
    },

    async deleteByExternalIds(companyId, tableId, externalIds) {
      return sql.write((db) => {
        let deleted = 0
        for (const slice of slices([...new Set(externalIds)])) {
          const result = db.run(
            `DELETE FROM data_table_records INDEXED BY data_table_records_external
             WHERE company_id = ? AND table_id = ? AND external_id IN (${placeholders(slice)})`,
            companyId,
            tableId,
            ...slice,
          )
          deleted += Number(result.changes)
        }
        return deleted
      })
    },

    async deleteAll(companyId, tableId) {
      return sql.write((db) =>
        Number(db.run('DELETE FROM data_table_records WHERE company_id = ? AND table_id = ?', companyId, tableId).changes),
      )
    },

    async listOverridden(companyId, tableId) {
      const rows = await sql.all(
        `SELECT doc FROM data_table_records WHERE company_id = ? AND table_id = ? AND json_extract(doc, '$.overrides') <> '{}'
         ORDER BY id`,
        companyId,
        tableId,
      )
      return rows.map((row) => JSON.parse(row.doc as string) as DataTableRecord)
    },

    async deleteUnoverridden(companyId, tableId, limit) {
      return sql.write((db) =>
        Number(
          db.run(
            `DELETE FROM data_table_records WHERE company_id = ?1 AND table_id = ?2 AND id IN (
               SELECT id FROM data_table_records WHERE company_id = ?1 AND table_id = ?2
                 AND coalesce(json_extract(doc, '$.overrides'), '{}') = '{}'
               ORDER BY id LIMIT ?3)`,
            companyId,
            tableId,
            limit,
          ).changes,
        ),
      )
    },
  }
}
