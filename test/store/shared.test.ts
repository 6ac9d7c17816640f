import { describe, expect, it } from 'vitest'
import { newId } from '../../src/ids.ts'
import { rateSubjectKey, StoreConflictError } from '../../src/store/port.ts'
import { asStoreError } from '../../src/store/shared/conflicts.ts'
import { definedChanges } from '../../src/store/shared/defined-changes.ts'
import { SerialQueue } from '../../src/store/shared/serial-queue.ts'
import { gate } from './contract/support.ts'
import { minute } from './builders.ts'

describe('what both adapters share', () => {
  it('keys a rate window by company or by address, never mixing the two', () => {
    const companyId = newId()
    expect(rateSubjectKey({ companyId })).toBe(`company:${companyId}`)
    expect(rateSubjectKey({ address: '127.0.0.1' })).toBe('address:127.0.0.1')
  })

  it('sets only the fields an admin edit gives', () => {
    expect(definedChanges({ modified_at: minute(1), payment: null, status: undefined })).toStrictEqual({
      modified_at: minute(1),
      payment: null,
    })
  })

  it("turns a driver's broken uniqueness rule into StoreConflictError, with the driver's error as its cause, and keeps every other error", () => {
    const duplicate = new Error('UNIQUE constraint failed: users.email_lower')
    const other = new Error('disk I/O error')
    const isUnique = (error: unknown) => error === duplicate
    const conflict = asStoreError(duplicate, isUnique)
    expect(conflict).toBeInstanceOf(StoreConflictError)
    expect(conflict).toMatchObject({ message: duplicate.message, cause: duplicate })
    expect(asStoreError(other, isUnique)).toBe(other)
  })

  it('runs queued work one at a time, in call order, and goes on after work that failed', async () => {
    const queue = new SerialQueue()
    const order: string[] = []
    const first = gate()
    const running = [
      queue.run(async () => {
        order.push('first starts')
        await first.promise
        order.push('first ends')
      }),
      queue.run(async () => {
        order.push('second fails')
        throw new Error('failed')
      }),
      queue.run(async () => {
        order.push('third')
        return 3
      }),
    ]
    await new Promise((resolve) => setImmediate(resolve))
    expect(order).toStrictEqual(['first starts'])
    first.open()
    const [, failed, third] = await Promise.allSettled(running)
    expect(order).toStrictEqual(['first starts', 'first ends', 'second fails', 'third'])
    expect(failed).toMatchObject({ status: 'rejected', reason: { message: 'failed' } })
    expect(third).toStrictEqual({ status: 'fulfilled', value: 3 })
  })
})
