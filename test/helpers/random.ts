import { mulberry32 } from '../../src/seeded-random.ts'

/** A seeded pseudo-random sequence (`mulberry32`), so that a randomized test that fails can be run again. */
export function randomOf(seed: number) {
  const next = mulberry32(seed)
  return { next, pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] }
}

export type Random = ReturnType<typeof randomOf>
