import type { Document } from 'bson'
import type { AnyBulkWriteOperation } from 'mongodb'
import type { DataTableRecord } from '../model.ts'
import type { DataTableRecordRepository } from '../port.ts'
import { encode, lookupId, lookupIds } from './codec.ts'
import { DATA_TABLE_RECORDS } from './collections.ts'
import { atomically, collectionOf, inSession, type MongoContext } from './context.ts'
import { cursorId, inTable } from './filters.ts'
import { countAll, findAll, findFirst, lastIdOf, replaceById, writeAll } from './operations.ts'

/** A record without a manual override: its `overrides` is the empty document (or missing). */
const UNOVERRIDDEN: Document = { overrides: { $in: [{}, null] } }

/**
 * Data-table records; a unique (company, table, external id) index refuses an external id another record of the
 * table holds. A `deleteMany` is atomic per document only, so each delete runs in the caller's transaction, or
 * in one of its own.
 */
export function mongoRecords(context: MongoContext): DataTableRecordRepository {
  return {
    upsert: (companyId, upserted) => writeAll(context, DATA_TABLE_RECORDS, upsertRecordsOperations(companyId, upserted)),
    list: (companyId, tableId, window) => findAll<DataTableRecord>(context, DATA_TABLE_RECORDS, inTable(companyId, tableId), window),
    count: (companyId, tableId) => countAll(context, DATA_TABLE_RECORDS, inTable(companyId, tableId)),
    lastId: (companyId, tableId) => lastIdOf(context, DATA_TABLE_RECORDS, inTable(companyId, tableId)),

    saveMany: (companyId, saved) => writeAll(context, DATA_TABLE_RECORDS, saveRecordsOperations(companyId, saved)),

    async findByExternalIds(companyId, tableId, externalIds) {
      if (externalIds.length === 0) return new Map()
      const filter = inTable(companyId, tableId, { external_id: { $in: [...new Set(externalIds)] } })
      const found = await findAll<DataTableRecord>(context, DATA_TABLE_RECORDS, filter)
      return new Map(found.map((record) => [record.external_id, record]))
    },

    async deleteByExternalIds(companyId, tableId, externalIds) {
      if (externalIds.length === 0) return 0
      const filter = inTable(companyId, tableId, { external_id: { $in: [...new Set(externalIds)] } })
      return atomically(
        context,
        async (session) => (await collectionOf(context, DATA_TABLE_RECORDS).deleteMany(filter, inSession(session))).deletedCount,
      )
    },

    async deleteAll(companyId, tableId) {
      return atomically(
        context,
        async (session) =>
          (await collectionOf(context, DATA_TABLE_RECORDS).deleteMany(inTable(companyId, tableId), inSession(session))).deletedCount,
      )
    },

    async getMany(companyId, tableId, ids) {
      if (ids.length === 0) return new Map()
      const found = await findAll<DataTableRecord>(
        context,
        DATA_TABLE_RECORDS,
        inTable(companyId, tableId, { _id: { $in: lookupIds(ids) } }),
      )
      return new Map(found.map((record) => [record.id, record]))
    },

    page(companyId, tableId, afterId, limit) {
      const filter = inTable(companyId, tableId)
      if (afterId !== null) filter._id = { $gt: cursorId(afterId) }
      return findFirst<DataTableRecord>(context, DATA_TABLE_RECORDS, filter, limit)
    },

    async deleteUnoverridden(companyId, tableId, limit) {
      // A limit of 0 means "no limit" to MongoDB: a batch of no records deletes none.
      if (limit <= 0) return 0
      return atomically(context, async (session) => {
        const records = collectionOf(context, DATA_TABLE_RECORDS)
        const batch = await records
          .find(inTable(companyId, tableId, UNOVERRIDDEN), { ...inSession(session), sort: { _id: 1 }, limit, projection: { _id: 1 } })
          .toArray()
        if (batch.length === 0) return 0
        const ids = batch.map((document) => document._id)
        return (await records.deleteMany(inTable(companyId, tableId, { _id: { $in: ids } }), inSession(session))).deletedCount
      })
    },
  }
}

/**
 * Upserts by (table, external id), in order, in one transaction. An update sets every field but the id and
 * `created_at`, which only an insert sets (`$setOnInsert`): a replaced record keeps both.
 */
export function upsertRecordsOperations(companyId: string, upserted: readonly DataTableRecord[]): AnyBulkWriteOperation<Document>[] {
  return upserted.map((record) => {
    const { _id, created_at, ...fields } = encode(DATA_TABLE_RECORDS, { ...record, company_id: companyId })
    // The filter's fields are left out of $set: an insert takes them from the filter, an update keeps them.
    for (const field of ['company_id', 'table_id', 'external_id']) delete fields[field]
    return {
      updateOne: {
        filter: inTable(companyId, record.table_id, { external_id: record.external_id }),
        update: { $set: fields, $setOnInsert: { _id, created_at } },
        upsert: true,
      },
    }
  })
}

/** `saveMany`'s writes: each filter names the record's table too, the rest of the collection's shard key. */
export function saveRecordsOperations(companyId: string, saved: readonly DataTableRecord[]): AnyBulkWriteOperation<Document>[] {
  return replaceById(DATA_TABLE_RECORDS, companyId, saved, (record) => ({ table_id: lookupId(record.table_id) }))
}
