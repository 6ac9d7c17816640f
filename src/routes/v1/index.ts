import type { FastifyPluginAsync } from 'fastify'
import { archiveRoutes } from './archive.ts'
import { attributionRoutes } from './attributions.ts'
import { importRoutes } from './imports.ts'
import { reportingRoutes } from './reporting.ts'
import { tableRecordReadRoutes } from './table-records-read.ts'
import { tableRecordWriteRoutes } from './table-records-write.ts'
import { userReadRoutes } from './users-read.ts'
import { userWriteRoutes } from './users-write.ts'

/** The v1 interface: one plugin per resource. */
export const v1Routes: FastifyPluginAsync = async (app) => {
  await app.register(userReadRoutes)
  await app.register(tableRecordReadRoutes)
  await app.register(reportingRoutes)
  await app.register(userWriteRoutes)
  await app.register(attributionRoutes)
  await app.register(archiveRoutes)
  await app.register(tableRecordWriteRoutes)
  await app.register(importRoutes)
}
