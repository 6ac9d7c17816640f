import { describe, expect, it } from 'vitest'
import { Pacer } from '../src/pacing.ts'

/** Whether something scheduled with setImmediate before `work` ran by the time `work` is done. */
async function turnGivenDuring(work: () => Promise<void>): Promise<boolean> {
  let ran = false
  setImmediate(() => {
    ran = true
  })
  await work()
  return ran
}

describe('Pacer', () => {
  it('gives no turn before its budget is spent', async () => {
    const pacer = new Pacer(60_000)
    expect(await turnGivenDuring(() => pacer.pause())).toBe(false)
  })

  it('gives the event loop a turn once its budget is spent', async () => {
    const pacer = new Pacer(0)
    expect(await turnGivenDuring(() => pacer.pause())).toBe(true)
    expect(await turnGivenDuring(() => pacer.pause())).toBe(true)
  })
})
