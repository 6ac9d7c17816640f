import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { FIXTURE_SCHEMA_FILE, fixtureJsonSchema } from '../scripts/fixture-schema.ts'

describe('the published fixture schema', () => {
  it('is the one the loader validates with (run npm run docs:schema after changing it)', () => {
    expect(readFileSync(FIXTURE_SCHEMA_FILE, 'utf8')).toBe(fixtureJsonSchema())
  })
})
