import { describe, expect, it } from 'vitest'
import { SlotQueues, type SlotTicket } from '../src/slot-queues.ts'

/** Queues whose slots given back are passed on only when the test says (`turn`), as the event loop's next turn would. */
function queues(slots: number, maxWaiting: number) {
  const passes: Array<() => void> = []
  const slotQueues = new SlotQueues(slots, maxWaiting, (pass) => passes.push(pass))
  const held: string[] = []
  return {
    slotQueues,
    held,
    /** Takes a ticket named `name` for `key`; its name is written to `held` when it gets its slot after waiting. */
    take: (key: string, name: string) => slotQueues.take(key, () => held.push(name)),
    /** Runs the passes due: the event loop's next turn. */
    turn() {
      for (const pass of passes.splice(0)) pass()
    },
  }
}

describe('SlotQueues', () => {
  it('gives free slots at once, then queues, and passes each slot given back to the first waiting', () => {
    const q = queues(2, 10)
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((name) => q.take('k', name) as SlotTicket)
    expect([a.state, b.state, c.state, d.state]).toEqual(['held', 'held', 'waiting', 'waiting'])
    expect(q.slotQueues.of('k')).toEqual({ holding: 2, waiting: 2 })
    b.release()
    a.release()
    expect(q.held).toEqual([])
    q.turn()
    expect(q.held).toEqual(['c', 'd'])
    expect([c.state, d.state]).toEqual(['held', 'held'])
    expect(q.slotQueues.of('k')).toEqual({ holding: 2, waiting: 0 })
  })

  it('passes a slot given back only at the next turn: a ticket taken meanwhile waits behind those already waiting', () => {
    const q = queues(1, 10)
    const first = q.take('k', 'first') as SlotTicket
    first.release()
    const second = q.take('k', 'second') as SlotTicket
    const third = q.take('k', 'third') as SlotTicket
    expect([second.state, third.state]).toEqual(['waiting', 'waiting'])
    q.turn()
    expect(q.held).toEqual(['second'])
    second.release()
    q.turn()
    expect(q.held).toEqual(['second', 'third'])
  })

  it('refuses a ticket once maxWaiting wait, and takes one again when a place is free', () => {
    const q = queues(1, 2)
    const holder = q.take('k', 'holder') as SlotTicket
    const waiting = [q.take('k', 'w1'), q.take('k', 'w2')]
    expect(waiting.every((ticket) => ticket !== null)).toBe(true)
    expect(q.take('k', 'refused')).toBeNull()
    expect(q.slotQueues.of('k')).toEqual({ holding: 1, waiting: 2 })
    // Another key has its own slots and queue.
    expect(q.take('other', 'o')?.state).toBe('held')
    holder.release()
    q.turn()
    expect(q.held).toEqual(['w1'])
    expect(q.take('k', 'w3')).not.toBeNull()
  })

  it('lets a waiting ticket leave without ever holding a slot', () => {
    const q = queues(1, 10)
    const holder = q.take('k', 'holder') as SlotTicket
    const gone = q.take('k', 'gone') as SlotTicket
    const next = q.take('k', 'next') as SlotTicket
    gone.release()
    gone.release()
    expect(q.slotQueues.of('k')).toEqual({ holding: 1, waiting: 1 })
    holder.release()
    q.turn()
    expect(q.held).toEqual(['next'])
    expect(gone.state).toBe('released')
    expect(next.state).toBe('held')
  })

  it('gives a slot back once however often it is released, and forgets a key with no ticket left', () => {
    const q = queues(1, 10)
    const a = q.take('k', 'a') as SlotTicket
    const b = q.take('k', 'b') as SlotTicket
    const c = q.take('k', 'c') as SlotTicket
    a.release()
    a.release()
    q.turn()
    // One slot given back, one waiting ticket holding it: c still waits.
    expect(q.held).toEqual(['b'])
    expect(q.slotQueues.of('k')).toEqual({ holding: 1, waiting: 1 })
    b.release()
    q.turn()
    expect(q.held).toEqual(['b', 'c'])
    c.release()
    c.release()
    b.release()
    expect(q.slotQueues.keys).toBe(1)
    q.turn()
    expect(q.slotQueues.of('k')).toEqual({ holding: 0, waiting: 0 })
    expect(q.slotQueues.keys).toBe(0)
  })

  it('passes slots at the event loop turn after the release by default', async () => {
    const slotQueues = new SlotQueues(1, 10)
    const holder = slotQueues.take('k', () => {}) as SlotTicket
    let held = false
    slotQueues.take('k', () => {
      held = true
    })
    holder.release()
    await Promise.resolve()
    expect(held).toBe(false)
    await new Promise((resolve) => setImmediate(resolve))
    expect(held).toBe(true)
  })
})
