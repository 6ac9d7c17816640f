import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { call } from './helpers/server.ts'
import { runCli, startServerProcess, tempDataDir } from './helpers/process.ts'

describe('npm start on the embedded store', () => {
  it('creates the demo company on first start, prints a working key and curl line, and reuses the data later', async () => {
    const dataDir = tempDataDir()
    const first = startServerProcess({ DATA_DIR: dataDir })
    let key: string
    try {
      const [, url] = await first.waitFor(/listening on (http:\/\/\S+)/)
      const [, curlKey, curlUrl] = await first.waitFor(/curl -H "X-API-Key: (\S+)" (\S+)/)
      key = curlKey
      expect(curlUrl).toBe(`${url}/v2/data-structures`)
      const reply = await call(curlUrl, { key })
      expect(reply.status).toBe(200)
      expect(reply.body.data.length).toBeGreaterThanOrEqual(7)

      const keyFile = join(dataDir, 'demo-api-key')
      expect(readFileSync(keyFile, 'utf8').trim()).toBe(key)
      expect(statSync(keyFile).mode & 0o777).toBe(0o600)
    } finally {
      expect(await first.stop()).toBe(0)
    }

    const second = startServerProcess({ DATA_DIR: dataDir })
    try {
      await second.waitFor(/its API key is in (\S+)/)
      expect(second.output()).not.toContain('Demo company created')
      const [, url] = await second.waitFor(/listening on (http:\/\/\S+)/)
      expect((await call(`${url}/v2/data-structures`, { key })).status).toBe(200)
    } finally {
      await second.stop()
    }
    const companies = runCli(['companies', '--json'], { DATA_DIR: dataDir })
    expect(JSON.parse(companies.stdout)).toHaveLength(1)

    // Its key revoked, a later start no longer offers the key file to try, and says why.
    const [{ id: companyId }] = JSON.parse(companies.stdout)
    const [{ id: keyId }] = JSON.parse(runCli(['keys', '--company', companyId, '--json'], { DATA_DIR: dataDir }).stdout)
    expect(runCli(['keys', 'delete', '--company', companyId, '--key', keyId], { DATA_DIR: dataDir }).code).toBe(0)
    const third = startServerProcess({ DATA_DIR: dataDir })
    try {
      await third.waitFor(/listening on (http:\/\/\S+)/)
      await third.waitFor(/The key in (\S+) is no longer valid \(revoked, or its company deleted\)/)
      expect(third.output()).not.toContain('its API key is in')
      expect(third.output()).not.toContain('curl')
    } finally {
      await third.stop()
    }
  })

  it.each([
    ['on a data directory, pointing at the key file', true],
    ['in memory, pointing at the variable', false],
  ])('never prints a DEMO_API_KEY the operator chose, %s', async (_case, onDisk) => {
    const secret = 'cak_an-operators-own-demo-secret'
    const dataDir = onDisk ? tempDataDir() : ':memory:'
    const server = startServerProcess({ DATA_DIR: dataDir, DEMO_API_KEY: secret })
    try {
      const [, keySource, curlUrl] = await server.waitFor(/curl -H "X-API-Key: (\S+(?: \S+)?)" (http\S+)/)
      expect(keySource).toBe(onDisk ? `$(cat ${join(dataDir, 'demo-api-key')})` : '$DEMO_API_KEY')
      expect(server.output()).toContain('Its API key is the value of DEMO_API_KEY (not shown')
      expect(server.output()).not.toContain(secret)
      expect((await call(curlUrl, { key: secret })).status).toBe(200)
    } finally {
      await server.stop()
    }
  })

  it('creates no demo company with DEMO=off', async () => {
    const dataDir = tempDataDir()
    const server = startServerProcess({ DATA_DIR: dataDir, DEMO: 'off' })
    try {
      await server.waitFor(/listening on/)
      expect(server.output()).not.toContain('X-API-Key')
    } finally {
      await server.stop()
    }
    expect(JSON.parse(runCli(['companies', '--json'], { DATA_DIR: dataDir }).stdout)).toEqual([])
  })

  it('refuses to start on a bad variable, naming it', async () => {
    const result = runCli(['serve'], { DATA_DIR: tempDataDir(), PORT: 'not-a-port' })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('PORT=')
  })
})
