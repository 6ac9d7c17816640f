import type { Document } from 'bson'
import type { AnyBulkWriteOperation } from 'mongodb'
import type { DataTableRecord } from '../model.ts'
import type { DataTableRecordRepository } from '../port.ts'
import { lookupId } from './codec.ts'
import { DATA_TABLE_RECORDS } from './collections.ts'
import { inTable } from './filters.ts'
import { replaceById } from './repositories.ts'
import { atomically, collectionOf, findAll, inSession, type Scope, writeAll } from './scope.ts'

/** `saveMany`'s writes: each filter names the record's table too, the rest of the collection's shard key. */
export function saveRecordsOperations(companyId: string, saved: readonly DataTableRecord[]): AnyBulkWriteOperation<Document>[] {
  return replaceById(DATA_TABLE_RECORDS, companyId, saved, (record) => ({ table_id: lookupId(record.table_id) }))
}

type RecordWrites = Pick<
  DataTableRecordRepository,
  'saveMany' | 'findByExternalIds' | 'deleteByExternalIds' | 'deleteAll' | 'listOverridden' | 'deleteUnoverridden'
>

/** A record without a manual override: its `overrides` is the empty document (or missing). */
const UNOVERRIDDEN: Document = { overrides: { $in: [{}, null] } }

/**
 * The data-table record operations of the import engine. A `deleteMany` is atomic per document only, so each
 * delete runs in the caller's transaction, or in one of its own.
 */
export function mongoRecordWrites(scope: Scope): RecordWrites {
  return {
    // The unique (company, table, external id) index refuses an external id another record holds.
    saveMany: (companyId, saved) => writeAll(scope, DATA_TABLE_RECORDS, saveRecordsOperations(companyId, saved)),

    async findByExternalIds(companyId, tableId, externalIds) {
      if (externalIds.length === 0) return new Map()
      const filter = inTable(companyId, tableId, { external_id: { $in: [...new Set(externalIds)] } })
      const found = await findAll<DataTableRecord>(scope, DATA_TABLE_RECORDS, filter)
      return new Map(found.map((record) => [record.external_id, record]))
    },

    async deleteByExternalIds(companyId, tableId, externalIds) {
      if (externalIds.length === 0) return 0
      const filter = inTable(companyId, tableId, { external_id: { $in: [...new Set(externalIds)] } })
      return atomically(scope, async (session) => (await collectionOf(scope, DATA_TABLE_RECORDS).deleteMany(filter, inSession(session))).deletedCount)
    },

    async deleteAll(companyId, tableId) {
      return atomically(
        scope,
        async (session) => (await collectionOf(scope, DATA_TABLE_RECORDS).deleteMany(inTable(companyId, tableId), inSession(session))).deletedCount,
      )
    },

    // An empty override map is stored as `{}`: "has at least one override" is "is not the empty document".
    listOverridden: (companyId, tableId) => findAll<DataTableRecord>(scope, DATA_TABLE_RECORDS, inTable(companyId, tableId, { overrides: { $nin: [{}, null] } })),

    async deleteUnoverridden(companyId, tableId, limit) {
      return atomically(scope, async (session) => {
        const records = collectionOf(scope, DATA_TABLE_RECORDS)
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
