import type { FastifyPluginAsync } from 'fastify'
import { dataStructureRoutes } from './data-structures.ts'
import { fieldRoutes } from './fields.ts'
import { quotaValueRoutes } from './quota-values.ts'
import { reportingRoutes } from './reporting.ts'

/** The v2 extraction interface: one plugin per resource. */
export const v2Routes: FastifyPluginAsync = async (app) => {
  await app.register(dataStructureRoutes)
  await app.register(fieldRoutes)
  await app.register(reportingRoutes)
  await app.register(quotaValueRoutes)
}
