import type { Document } from 'bson'
import type { AnyBulkWriteOperation } from 'mongodb'
import type { GroupAttribution, ManagerAttribution } from '../model.ts'
import type { AttributionRepository } from '../port.ts'
import { type Codec, encode, lookupIds } from './codec.ts'
import { GROUP_ATTRIBUTIONS, MANAGER_ATTRIBUTIONS } from './collections.ts'
import type { MongoContext } from './context.ts'
import { inCompany } from './filters.ts'
import { findAll, writeAll } from './operations.ts'

export function mongoAttributions(context: MongoContext): AttributionRepository {
  return {
    replaceManagers: (companyId, userIds, rows) => replaceAttributions(context, MANAGER_ATTRIBUTIONS, companyId, userIds, rows),
    listManagers: (companyId) => findAll<ManagerAttribution>(context, MANAGER_ATTRIBUTIONS, inCompany(companyId)),
    replaceGroups: (companyId, userIds, rows) => replaceAttributions(context, GROUP_ATTRIBUTIONS, companyId, userIds, rows),
    listGroups: (companyId) => findAll<GroupAttribution>(context, GROUP_ATTRIBUTIONS, inCompany(companyId)),
  }
}

/** Deletes the attributions of the given users and inserts the new ones, in one transaction. */
async function replaceAttributions(
  context: MongoContext,
  codec: Codec,
  companyId: string,
  userIds: readonly string[],
  rows: ReadonlyArray<ManagerAttribution | GroupAttribution>,
): Promise<void> {
  const operations: AnyBulkWriteOperation<Document>[] = []
  if (userIds.length > 0) operations.push({ deleteMany: { filter: inCompany(companyId, { user_id: { $in: lookupIds(userIds) } }) } })
  for (const attribution of rows) {
    operations.push({ insertOne: { document: encode(codec, { ...attribution, company_id: companyId }) } })
  }
  await writeAll(context, codec, operations)
}
