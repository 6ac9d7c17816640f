import type { User } from '../model.ts'
import type { UserRepository } from '../port.ts'
import type { Sql } from './connection.ts'
import { countOf, offsetWindow, parseDocument, parseDocuments, placeholders, slices } from './queries.ts'

/** Users, with their lower-case email in a column of its own: a unique index keeps emails unique per company. */
export function sqliteUsers(sql: Sql): UserRepository {
  return {
    async save(companyId, users) {
      await sql.write((db) => {
        for (const user of users) {
          db.run(
            `INSERT INTO users (company_id, id, email_lower, doc) VALUES (?, ?, ?, ?)
             ON CONFLICT (company_id, id) DO UPDATE SET email_lower = excluded.email_lower, doc = excluded.doc`,
            companyId,
            user.id,
            user.email.toLowerCase(),
            JSON.stringify({ ...user, company_id: companyId }),
          )
        }
      })
    },
    async get(companyId, id) {
      return parseDocument<User>(await sql.get('SELECT doc FROM users WHERE company_id = ? AND id = ?', companyId, id))
    },
    async getMany(companyId, ids) {
      const found = new Map<string, User>()
      if (ids.length === 0) return found
      for (const slice of slices([...new Set(ids)])) {
        const rows = await sql.all(`SELECT doc FROM users WHERE company_id = ? AND id IN (${placeholders(slice)})`, companyId, ...slice)
        for (const user of parseDocuments<User>(rows)) found.set(user.id, user)
      }
      return found
    },
    async findByEmails(companyId, emails) {
      const found = new Map<string, User>()
      if (emails.length === 0) return found
      for (const slice of slices([...new Set(emails.map((email) => email.toLowerCase()))])) {
        const rows = await sql.all(
          `SELECT doc FROM users WHERE company_id = ? AND email_lower IN (${placeholders(slice)})`,
          companyId,
          ...slice,
        )
        for (const user of parseDocuments<User>(rows)) found.set(user.email.toLowerCase(), user)
      }
      return found
    },
    async list(companyId, window) {
      const query = offsetWindow('SELECT doc FROM users', 'company_id = ?', [companyId], window)
      return parseDocuments<User>(await sql.all(query.sql, ...query.params))
    },
    async count(companyId) {
      return countOf(await sql.remembering.get('SELECT count(*) AS n FROM users WHERE company_id = ?', companyId))
    },
    async lastId(companyId) {
      const [row] = await sql.values('SELECT max(id) FROM users WHERE company_id = ?', companyId)
      return (row?.[0] as string | null | undefined) ?? null
    },
  }
}
