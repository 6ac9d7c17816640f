import type { FastifyPluginAsync } from 'fastify'
import { archiveRoutes } from './archive.ts'
import { attributionRoutes } from './attributions.ts'
import { importRoutes } from './imports.ts'
import { reportingRoutes } from './reporting.ts'
import { tableRecordRoutes } from './table-records.ts'
import { userRoutes } from './users.ts'

/** The v1 interface: one plugin per resource. */
export const v1Routes: FastifyPluginAsync = async (app) => {
  await app.register(userRoutes)
  await app.register(attributionRoutes)
  await app.register(archiveRoutes)
  await app.register(tableRecordRoutes)
  await app.register(reportingRoutes)
  await app.register(importRoutes)
}
