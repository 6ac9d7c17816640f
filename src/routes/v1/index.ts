import type { FastifyPluginAsync } from 'fastify'

/** The v1 interface: one plugin per resource. */
export const v1Routes: FastifyPluginAsync = async () => {}
