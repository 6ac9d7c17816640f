/**
 * mulberry32: a small seeded generator of numbers in [0, 1). The same seed gives the same numbers, so that what is
 * drawn from it (a demo company, a fault's draws, a randomized test) can be made again.
 */
export function mulberry32(seed: number): () => number {
  let state = seed | 0
  return () => {
    state = (state + 0x6d2b79f5) | 0
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state)
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296
  }
}
