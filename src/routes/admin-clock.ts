import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ClockMoveSchema, clockState, ClockStateSchema, moveClock } from '../admin/clock.ts'
import type { WorkerProbe } from './health.ts'
import { UnauthorizedBodySchema, ValidationErrorBodySchema } from './schemas.ts'

/**
 * The service's clock (registered inside the admin plugin, behind its token): read it, and move a controlled one
 * (`CLOCK=controlled`) for every process sharing the store. After a move, this process's import worker looks for
 * the imports it made runnable (closed debounce windows, expired leases) at once.
 */
export const adminClockRoutes: FastifyPluginAsyncTypebox<{ worker?: WorkerProbe }> = async (app, { worker }) => {
  app.get(
    '/clock',
    {
      schema: {
        summary: "The service's clock: its mode and its time now",
        operationId: 'adminGetClock',
        description: '`mode` is `controlled` (CLOCK=controlled: moved only by POST /admin/clock) or `system`.',
        response: { 200: ClockStateSchema, 401: UnauthorizedBodySchema },
      },
    },
    async () => clockState(app.clock),
  )

  app.post(
    '/clock',
    {
      schema: {
        summary: 'Move the controlled clock ahead, for every process sharing the store',
        operationId: 'adminMoveClock',
        description:
          'Debounce windows, import leases, rate-limit windows, `modified_at` and `created_at`, and the current month of archives and calculations all follow it. Time never goes back: a `set` before now is a 400, and so is any move with CLOCK=system.',
        body: ClockMoveSchema,
        response: { 200: ClockStateSchema, 400: ValidationErrorBodySchema, 401: UnauthorizedBodySchema },
      },
    },
    async (request) => {
      const moved = await moveClock(app.clock, request.body)
      worker?.wake?.()
      return moved
    },
  )
}
