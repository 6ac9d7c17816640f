import { describe, expect, it } from 'vitest'
import { smallFixture } from './helpers/fixtures.ts'
import { runCli, tempDataDir } from './helpers/process.ts'

describe('load - (a fixture on standard input)', () => {
  it('creates the company from the JSON piped in, as `docker compose exec -T api-1 node src/cli.ts load - < file` does', () => {
    const dataDir = tempDataDir()
    const loaded = runCli(['load', '-', '--json'], { DATA_DIR: dataDir }, JSON.stringify(smallFixture('Piped')))
    expect(loaded.code, loaded.stderr).toBe(0)
    expect(JSON.parse(loaded.stdout)).toEqual({
      company_id: expect.stringMatching(/^[0-9a-f]{24}$/),
      api_key: expect.stringMatching(/^cak_/),
    })
    const companies = JSON.parse(runCli(['companies', '--json'], { DATA_DIR: dataDir }).stdout) as Array<{ name: string }>
    expect(companies.map((company) => company.name)).toEqual(['Piped'])
  })

  it('refuses input that is not JSON as an invalid fixture (exit 1), naming standard input', () => {
    const result = runCli(['load', '-'], { DATA_DIR: tempDataDir() }, '{ not json')
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('standard input: cannot be read as JSON')
  })
})
