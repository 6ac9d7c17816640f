import type { ReportingStructure } from '../model.ts'
import type { ReportingStructureRepository } from '../port.ts'
import type { Sql } from './connection.ts'
import { parseDocument, parseDocuments } from './queries.ts'

export function sqliteStructures(sql: Sql): ReportingStructureRepository {
  return {
    async insert(structure) {
      await sql.write((db) =>
        db.run(
          'INSERT INTO reporting_structures (company_id, id, doc) VALUES (?, ?, ?)',
          structure.company_id,
          structure.id,
          JSON.stringify(structure),
        ),
      )
    },
    async get(companyId, id) {
      return parseDocument<ReportingStructure>(
        await sql.remembering.get('SELECT doc FROM reporting_structures WHERE company_id = ? AND id = ?', companyId, id),
      )
    },
    async list(companyId) {
      return parseDocuments<ReportingStructure>(
        await sql.remembering.all('SELECT doc FROM reporting_structures WHERE company_id = ? ORDER BY id', companyId),
      )
    },
  }
}
