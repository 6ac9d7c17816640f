import { describe, expect, it } from 'vitest'
import type { OffsetWindow } from '../src/store/port.ts'
import { readOffsetPage, WalkPositions } from '../src/v1/offset-page.ts'

/** A list of nine rows and a store whose data version a test moves; every window asked for is recorded. */
function aList() {
  const rows = Array.from({ length: 9 }, (_, index) => ({ id: `id${index}` }))
  const windows: OffsetWindow[] = []
  let version = 1
  let commitDuringRead = false
  const source = {
    count: async () => rows.length,
    async items(window: OffsetWindow) {
      windows.push(window)
      if (commitDuringRead) {
        version++
        commitDuringRead = false
      }
      const start = window.afterId === undefined ? window.offset : rows.findIndex((row) => row.id > window.afterId!)
      return rows.slice(start, start + window.limit)
    },
    rows: async (items: Array<{ id: string }>) => items.map((item) => item.id),
  }
  const store = { dataVersion: async () => String(version) }
  const positions = new WalkPositions()
  const page = (offset: number, limit: number) =>
    readOffsetPage({ offset: BigInt(offset), limit }, source, (next, size) => `?offset=${next}&limit=${size}`, {
      positions,
      list: 'the list',
      store,
    })
  return {
    windows,
    positions,
    page,
    commit: () => void version++,
    commitDuringNextRead: () => void (commitDuringRead = true),
  }
}

describe('the v1 walk: a page found by where the last one ended', () => {
  it('reads the page that next names after the last row of the page before, while the data version holds', async () => {
    const list = aList()
    expect(await list.page(0, 3)).toEqual({ count: 9, data: ['id0', 'id1', 'id2'], next: '?offset=3&limit=3' })
    expect(await list.page(3, 3)).toEqual({ count: 9, data: ['id3', 'id4', 'id5'], next: '?offset=6&limit=3' })
    expect(await list.page(6, 3)).toEqual({ count: 9, data: ['id6', 'id7', 'id8'], next: null })
    expect(list.windows).toEqual([
      { offset: 0, limit: 3 },
      { offset: 3, limit: 3, afterId: 'id2' },
      { offset: 6, limit: 3, afterId: 'id5' },
    ])
  })

  it('serves another limit from the same position: it is the row before an offset, whatever the page size', async () => {
    const list = aList()
    await list.page(0, 3)
    expect((await list.page(3, 5)).data).toEqual(['id3', 'id4', 'id5', 'id6', 'id7'])
    expect(list.windows[1]).toEqual({ offset: 3, limit: 5, afterId: 'id2' })
  })

  it('reads by offset once a commit moved the data version', async () => {
    const list = aList()
    await list.page(0, 3)
    list.commit()
    expect((await list.page(3, 3)).data).toEqual(['id3', 'id4', 'id5'])
    expect(list.windows[1]).toEqual({ offset: 3, limit: 3 })
  })

  it('keeps no position when a commit came while the page was read', async () => {
    const list = aList()
    list.commitDuringNextRead()
    await list.page(0, 3)
    await list.page(3, 3)
    expect(list.windows[1]).toEqual({ offset: 3, limit: 3 })
  })

  it('keeps no position after the last page, nor after a page shorter than its limit', async () => {
    const list = aList()
    await list.page(6, 3)
    await list.page(8, 2)
    expect(list.positions.size).toBe(0)
  })

  it('keeps at most its capacity, the oldest position going first', () => {
    const positions = new WalkPositions(2)
    positions.remember('a', 10n, 'v1', 'id9')
    positions.remember('b', 10n, 'v1', 'id19')
    positions.remember('a', 10n, 'v1', 'id9')
    positions.remember('c', 10n, 'v1', 'id29')
    expect(positions.size).toBe(2)
    expect(positions.idBefore('b', 10n, 'v1')).toBeNull()
    expect(positions.idBefore('a', 10n, 'v1')).toBe('id9')
    expect(positions.idBefore('c', 10n, 'v1')).toBe('id29')
    expect(positions.idBefore('c', 10n, 'v2')).toBeNull()
  })
})
