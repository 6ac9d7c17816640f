import type { CustomMetric } from '../model.ts'
import type { CustomMetricRepository } from '../port.ts'
import type { Sql } from './connection.ts'
import { parseDocuments } from './queries.ts'

export function sqliteMetrics(sql: Sql): CustomMetricRepository {
  return {
    async insert(metric) {
      await sql.write((db) =>
        db.run(
          'INSERT INTO custom_metrics (company_id, id, api_key, doc) VALUES (?, ?, ?, ?)',
          metric.company_id,
          metric.id,
          metric.api_key,
          JSON.stringify(metric),
        ),
      )
    },
    async list(companyId) {
      return parseDocuments<CustomMetric>(
        await sql.remembering.all('SELECT doc FROM custom_metrics WHERE company_id = ? ORDER BY id', companyId),
      )
    },
  }
}
