import { writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { FixtureSchema } from '../src/fixtures/schema.ts'

/** The fixture format as a JSON Schema document, as published in docs/. */
export function fixtureJsonSchema(): string {
  return `${JSON.stringify({ $schema: 'https://json-schema.org/draft/2020-12/schema', ...FixtureSchema }, null, 2)}\n`
}

export const FIXTURE_SCHEMA_FILE = resolve(import.meta.dirname, '../docs/fixture.schema.json')

if (import.meta.main) {
  writeFileSync(FIXTURE_SCHEMA_FILE, fixtureJsonSchema())
  console.log(`wrote ${FIXTURE_SCHEMA_FILE}`)
}
