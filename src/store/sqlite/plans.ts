import type { Plan } from '../model.ts'
import type { PlanRepository } from '../port.ts'
import type { Sql } from './connection.ts'
import { parseDocument, parseDocuments } from './queries.ts'

/** Plans, with their environment and name in columns of their own: a unique index keeps a name once per environment. */
export function sqlitePlans(sql: Sql): PlanRepository {
  return {
    async save(plans) {
      await sql.write((db) => {
        for (const plan of plans) {
          db.run(
            `INSERT INTO plans (company_id, id, environment, name, doc) VALUES (?, ?, ?, ?, ?)
             ON CONFLICT (company_id, id) DO UPDATE SET environment = excluded.environment, name = excluded.name, doc = excluded.doc`,
            plan.company_id,
            plan.id,
            plan.environment,
            plan.name,
            JSON.stringify(plan),
          )
        }
      })
    },
    get: async (companyId, id) =>
      parseDocument<Plan>(await sql.get('SELECT doc FROM plans WHERE company_id = ? AND id = ?', companyId, id)),
    list: async (companyId) => parseDocuments<Plan>(await sql.all('SELECT doc FROM plans WHERE company_id = ? ORDER BY id', companyId)),
    delete: (companyId, id) =>
      sql.write((db) => Number(db.run('DELETE FROM plans WHERE company_id = ? AND id = ?', companyId, id).changes) > 0),
  }
}
