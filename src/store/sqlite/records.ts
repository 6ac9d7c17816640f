import type { DataTableRecord } from '../model.ts'
import type { DataTableRecordRepository } from '../port.ts'
import type { Sql } from './connection.ts'
import { countOf, offsetWindow, parseDocument, parseDocuments, placeholders, slices } from './queries.ts'

/**
 * Data-table records, keyed by (company, table, id), with the external id in a column of its own under a unique
 * index. Lookups by external id name that index: without statistics the planner would rather scan the table's
 * primary-key range, which grows with the table.
 */
export function sqliteRecords(sql: Sql): DataTableRecordRepository {
  return {
    async upsert(companyId, records) {
      await sql.write((db) => {
        for (const record of records) {
          const stored = db.all(
            'SELECT doc FROM data_table_records WHERE company_id = ? AND table_id = ? AND external_id = ?',
            companyId,
            record.table_id,
            record.external_id,
          )[0]
          const previous = parseDocument<DataTableRecord>(stored)
          const next = previous ? { ...record, id: previous.id, created_at: previous.created_at } : record
          db.run(
            `INSERT INTO data_table_records (company_id, table_id, id, external_id, doc) VALUES (?, ?, ?, ?, ?)
             ON CONFLICT (company_id, table_id, id) DO UPDATE SET doc = excluded.doc`,
            companyId,
            next.table_id,
            next.id,
            next.external_id,
            JSON.stringify({ ...next, company_id: companyId }),
          )
        }
      })
    },

    async list(companyId, tableId, window) {
      const query = offsetWindow('SELECT doc FROM data_table_records', 'company_id = ? AND table_id = ?', [companyId, tableId], window)
      return parseDocuments<DataTableRecord>(await sql.all(query.sql, ...query.params))
    },

    async count(companyId, tableId) {
      return countOf(
        await sql.remembering.get('SELECT count(*) AS n FROM data_table_records WHERE company_id = ? AND table_id = ?', companyId, tableId),
      )
    },

    async lastId(companyId, tableId) {
      const [row] = await sql.values('SELECT max(id) FROM data_table_records WHERE company_id = ? AND table_id = ?', companyId, tableId)
      return (row?.[0] as string | null | undefined) ?? null
    },

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
        for (const record of parseDocuments<DataTableRecord>(rows)) found.set(record.external_id, record)
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

    async getMany(companyId, tableId, ids) {
      const found = new Map<string, DataTableRecord>()
      for (const slice of slices([...new Set(ids)])) {
        const rows = await sql.all(
          `SELECT doc FROM data_table_records WHERE company_id = ? AND table_id = ? AND id IN (${placeholders(slice)})`,
          companyId,
          tableId,
          ...slice,
        )
        for (const record of parseDocuments<DataTableRecord>(rows)) found.set(record.id, record)
      }
      return found
    },

    async page(companyId, tableId, afterId, limit) {
      const rows = await sql.all(
        'SELECT doc FROM data_table_records WHERE company_id = ? AND table_id = ? AND id > ? ORDER BY id LIMIT ?',
        companyId,
        tableId,
        afterId ?? '',
        limit,
      )
      return parseDocuments<DataTableRecord>(rows)
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
