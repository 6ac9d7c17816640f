import type { CustomMetric } from '../model.ts'
import type { CustomMetricRepository } from '../port.ts'
import type { Sql } from './connection.ts'
import { sqliteDefinitions } from './definitions.ts'

export function sqliteMetrics(sql: Sql): CustomMetricRepository {
  return sqliteDefinitions<CustomMetric>(sql, 'custom_metrics')
}
