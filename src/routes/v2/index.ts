import type { FastifyPluginAsync } from 'fastify'
import { dataStructureRoutes } from './data-structures.ts'

/** The v2 extraction interface: one plugin per resource. */
export const v2Routes: FastifyPluginAsync = async (app) => {
  await app.register(dataStructureRoutes)
}
