import { type Static, Type } from 'typebox'
import { CLOCK_STOP_TIME, type Clock, ControlledClock, DAY_MS } from '../clock.ts'
import { CLOCK_MODES, type ClockMode } from '../config.ts'
import { parseInstant } from '../domain/formats.ts'
import { ValidationError } from '../errors.ts'

/**
 * A move of the controlled clock: ahead by some milliseconds, or to an instant that is not in its past; exactly one
 * of the two (one object rather than a union of two, whose refusals would list each branch's complaints).
 */
export const ClockMoveSchema = Type.Object(
  {
    advance_ms: Type.Optional(Type.Integer({ minimum: 0, description: 'Milliseconds to move the clock ahead' })),
    set: Type.Optional(
      Type.String({ description: 'The instant to move the clock to (ISO 8601; without an offset, UTC): not before its time now' }),
    ),
  },
  { additionalProperties: false, description: '{"advance_ms": N} or {"set": "<ISO instant>"}: exactly one' },
)
export type ClockMove = Static<typeof ClockMoveSchema>

/** The clock's mode, and its time now (ISO 8601, UTC). */
export const ClockStateSchema = Type.Object({
  mode: Type.Enum([...CLOCK_MODES], {
    description: '`controlled` (CLOCK=controlled): moved by POST /admin/clock; `system`: the system clock',
  }),
  now: Type.String({ description: "The service's time now, ISO 8601 in UTC" }),
})
export type ClockState = Static<typeof ClockStateSchema>

/**
 * The clock as `GET /admin/clock` and the CLI's `clock` show it: its mode, and its time now (ISO 8601, UTC). A
 * controlled clock is read from the store first, so every process answers the same.
 */
export async function clockState(clock: Clock): Promise<ClockState> {
  await clock.sync?.()
  const mode: ClockMode = clock instanceof ControlledClock ? 'controlled' : 'system'
  return { mode, now: clock.now().toISOString() }
}

/**
 * Moves the controlled clock, for every process sharing the store, and answers its new state. Time never goes
 * back: a `set` before the clock's time now is refused, and so is any move of the system clock, and any move past
 * the end of year 9999.
 */
export async function moveClock(clock: Clock, move: ClockMove): Promise<ClockState> {
  if (!(clock instanceof ControlledClock)) {
    throw new ValidationError({
      error: 'ConflictError',
      resource: 'clock',
      description: 'the service runs on the system clock: start it with CLOCK=controlled (or --test-mode) to move its time',
    })
  }
  if ((move.advance_ms === undefined) === (move.set === undefined))
    throw new ValidationError({ resource: 'body', description: 'expected exactly one of advance_ms and set' })
  if (move.advance_ms !== undefined) {
    if (!Number.isSafeInteger(move.advance_ms) || move.advance_ms < 0)
      throw new ValidationError({ resource: 'advance_ms', description: 'expected a whole number of milliseconds, 0 or more' })
    await clock.sync()
    refusePastLatest('advance_ms', clock.now().getTime() + move.advance_ms)
    await clock.advance(move.advance_ms)
    return clockState(clock)
  }
  const target = parseInstant(move.set!)
  if (!target) {
    throw new ValidationError({
      resource: 'set',
      description: `expected an ISO 8601 date-time up to ${LATEST_TIME.toISOString()}, such as 2027-01-31T10:00:00Z`,
    })
  }
  await clock.sync()
  const now = clock.now()
  if (target.getTime() < now.getTime()) {
    throw new ValidationError({
      resource: 'set',
      description: `the clock never goes back: ${target.toISOString()} is before its time now, ${now.toISOString()}`,
    })
  }
  refusePastLatest('set', target.getTime())
  await clock.raiseTo(target)
  return clockState(clock)
}

/**
 * The latest time the clock may be moved to: a day before it stops (`CLOCK_STOP_TIME`), as it runs on from a move at
 * the system clock's pace. A clock stopped there no longer closes rate-limit windows: a day of running is the
 * margin before it does.
 */
const LATEST_TIME = new Date(CLOCK_STOP_TIME.getTime() - DAY_MS)

function refusePastLatest(resource: string, time: number): void {
  if (time > LATEST_TIME.getTime())
    throw new ValidationError({ resource, description: `the clock cannot go past ${LATEST_TIME.toISOString()}` })
}
