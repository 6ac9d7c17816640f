import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

/** What the README promises and a test can hold it to: the example that runs, and the variables it documents. */
const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')

describe('README', () => {
  it('shows the example of "Using it in your tests" exactly as test/using-it-in-your-tests.test.ts runs it', () => {
    const example = readFileSync(new URL('./using-it-in-your-tests.test.ts', import.meta.url), 'utf8')
    const section = readme.slice(readme.indexOf('## Using it in your tests'))
    expect(section).toContain(`\`\`\`ts\n${example}\`\`\``)
  })

  it('documents every configuration variable the service reads', () => {
    const config = readFileSync(new URL('../src/config.ts', import.meta.url), 'utf8')
    const variables = [...config.matchAll(/read(?:<[^>]+>)?\('([A-Z_]+)'/g)].map((match) => match[1])
    expect(variables).toContain('CLOCK')
    for (const variable of variables) expect(readme, variable).toContain(`| \`${variable}\` |`)
  })
})
