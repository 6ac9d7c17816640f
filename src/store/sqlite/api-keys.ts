import type { ApiKey } from '../model.ts'
import type { ApiKeyRepository } from '../port.ts'
import type { Sql } from './connection.ts'
import { parseDocument, parseDocuments } from './queries.ts'

export function sqliteApiKeys(sql: Sql): ApiKeyRepository {
  return {
    async insert(key) {
      await sql.write((db) =>
        db.run(
          'INSERT INTO api_keys (id, company_id, hash, doc) VALUES (?, ?, ?, ?)',
          key.id,
          key.company_id,
          key.hash,
          JSON.stringify(key),
        ),
      )
    },
    // The one lookup not limited to a company: the key is how the company is found (a unique index on the hash).
    async findByHash(hash) {
      return parseDocument<ApiKey>(await sql.get('SELECT doc FROM api_keys WHERE hash = ?', hash))
    },
    async list(companyId) {
      return parseDocuments<ApiKey>(await sql.all('SELECT doc FROM api_keys WHERE company_id = ? ORDER BY id', companyId))
    },
    delete: (companyId, id) =>
      sql.write((db) => Number(db.run('DELETE FROM api_keys WHERE company_id = ? AND id = ?', companyId, id).changes) > 0),
  }
}
