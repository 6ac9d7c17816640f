import type { CustomMetric } from '../model.ts'
import type { CustomMetricRepository } from '../port.ts'
import { CUSTOM_METRICS } from './collections.ts'
import type { MongoContext } from './context.ts'
import { inCompany } from './filters.ts'
import { findAll, insertOne } from './operations.ts'

export function mongoMetrics(context: MongoContext): CustomMetricRepository {
  return {
    insert: (metric) => insertOne(context, CUSTOM_METRICS, metric),
    list: (companyId) => findAll<CustomMetric>(context, CUSTOM_METRICS, inCompany(companyId)),
  }
}
