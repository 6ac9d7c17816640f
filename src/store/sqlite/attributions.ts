import type { GroupAttribution, ManagerAttribution } from '../model.ts'
import type { AttributionRepository } from '../port.ts'
import type { Sql } from './connection.ts'
import { parseDocuments, placeholders, slices } from './queries.ts'

export function sqliteAttributions(sql: Sql): AttributionRepository {
  return {
    replaceManagers: (companyId, userIds, attributions) =>
      replaceAttributions(sql, 'manager_attributions', companyId, userIds, attributions),
    async listManagers(companyId) {
      return parseDocuments<ManagerAttribution>(
        await sql.all('SELECT doc FROM manager_attributions WHERE company_id = ? ORDER BY id', companyId),
      )
    },
    replaceGroups: (companyId, userIds, attributions) => replaceAttributions(sql, 'group_attributions', companyId, userIds, attributions),
    async listGroups(companyId) {
      return parseDocuments<GroupAttribution>(
        await sql.all('SELECT doc FROM group_attributions WHERE company_id = ? ORDER BY id', companyId),
      )
    },
  }
}

/** Deletes the attributions of the given users and inserts the new ones, in one write. */
async function replaceAttributions(
  sql: Sql,
  table: 'manager_attributions' | 'group_attributions',
  companyId: string,
  userIds: readonly string[],
  attributions: ReadonlyArray<ManagerAttribution | GroupAttribution>,
): Promise<void> {
  await sql.write((db) => {
    for (const slice of slices(userIds))
      db.run(`DELETE FROM ${table} WHERE company_id = ? AND user_id IN (${placeholders(slice)})`, companyId, ...slice)
    for (const attribution of attributions) {
      db.run(
        `INSERT INTO ${table} (company_id, id, user_id, doc) VALUES (?, ?, ?, ?)`,
        companyId,
        attribution.id,
        attribution.user_id,
        JSON.stringify(attribution),
      )
    }
  })
}
