import type { Quota } from '../model.ts'
import type { QuotaRepository } from '../port.ts'
import type { Sql } from './connection.ts'
import { parseDocument, parseDocuments } from './queries.ts'

export function sqliteQuotas(sql: Sql): QuotaRepository {
  return {
    async insert(quota) {
      await sql.write((db) =>
        db.run('INSERT INTO quotas (company_id, id, doc) VALUES (?, ?, ?)', quota.company_id, quota.id, JSON.stringify(quota)),
      )
    },
    async get(companyId, id) {
      return parseDocument<Quota>(await sql.remembering.get('SELECT doc FROM quotas WHERE company_id = ? AND id = ?', companyId, id))
    },
    async list(companyId) {
      return parseDocuments<Quota>(await sql.remembering.all('SELECT doc FROM quotas WHERE company_id = ? ORDER BY id', companyId))
    },
    async setType(companyId, id, type, modifiedAt) {
      return sql.write((db) => {
        const quota = parseDocument<Quota>(db.all('SELECT doc FROM quotas WHERE company_id = ? AND id = ?', companyId, id)[0])
        if (!quota) return false
        const changed: Quota = { ...quota, type, modified_at: modifiedAt }
        db.run('UPDATE quotas SET doc = ? WHERE company_id = ? AND id = ?', JSON.stringify(changed), companyId, id)
        return true
      })
    },
  }
}
