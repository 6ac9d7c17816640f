import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { DatabaseSync } from 'node:sqlite'
import { describe, expect, it } from 'vitest'
import { smallFixture } from './helpers/fixtures.ts'
import { runCli, runCliAsync, startServerProcess, tempDataDir } from './helpers/process.ts'
import { call } from './helpers/server.ts'

describe('the CLI', () => {
  it('is executable as committed, so that installing the checkout by its path (npm makes a bin executable) leaves it as it was', () => {
    const bin = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { bin: Record<string, string> }).bin
    for (const file of Object.values(bin)) expect(statSync(new URL(`../${file}`, import.meta.url)).mode & 0o111, file).not.toBe(0)
  })

  it('demo creates a company at the chosen scale and prints its id and key as JSON', () => {
    const env = { DATA_DIR: tempDataDir() }
    const result = runCli(['demo', '--users', '6', '--months', '2', '--deals', '10', '--seed', 'cli', '--json'], env)
    expect(result.code, result.stderr).toBe(0)
    const created = JSON.parse(result.stdout)
    expect(created).toEqual({ company_id: expect.stringMatching(/^[0-9a-f]{24}$/), api_key: expect.any(String) })
    const structures = JSON.parse(runCli(['structures', '--company', created.company_id, '--json'], env).stdout)
    const deals = structures.find((item: any) => item.type === 'data_table' && item.environment === 'live')
    expect(deals).toEqual({ id: expect.any(String), name: expect.any(String), type: 'data_table', environment: 'live', key: 'deals' })
    const environments = new Set(structures.map((item: any) => item.environment))
    expect(environments).toEqual(new Set(['live', 'sandbox']))
    for (const item of structures)
      expect(Object.keys(item).toSorted()).toEqual(
        item.key ? ['environment', 'id', 'key', 'name', 'type'] : ['environment', 'id', 'name', 'type'],
      )
  })

  it('load creates a company from a fixture file; companies lists it; keys create adds a key', () => {
    const env = { DATA_DIR: tempDataDir() }
    const file = join(env.DATA_DIR, 'fixture.json')
    writeFileSync(file, JSON.stringify(smallFixture('Loaded')))
    const loaded = JSON.parse(runCli(['load', file, '--json'], env).stdout)
    expect(loaded.company_id).toMatch(/^[0-9a-f]{24}$/)
    expect(JSON.parse(runCli(['companies', '--json'], env).stdout)).toEqual([
      { id: loaded.company_id, name: 'Loaded', public_api_enabled: true },
    ])
    const key = runCli(['keys', 'create', '--company', loaded.company_id, '--user', 'rep@loaded.example', '--json'], env)
    expect(key.code, key.stderr).toBe(0)
    expect(JSON.parse(key.stdout).api_key).not.toBe(loaded.api_key)
    // A company id is read in any letter case, by every command that takes one.
    const upper = loaded.company_id.toUpperCase()
    expect(runCli(['keys', 'create', '--company', upper, '--json'], env).code).toBe(0)
    expect(JSON.parse(runCli(['structures', '--company', upper, '--json'], env).stdout).length).toBeGreaterThan(0)
    const plans = runCli(['plans', '--company', upper, '--json'], env)
    expect(plans.code, plans.stderr).toBe(0)
    expect(JSON.parse(plans.stdout)).toEqual(expect.any(Array))
  })

  it('reports every fixture problem with its JSON path and exits 1', () => {
    const env = { DATA_DIR: tempDataDir() }
    const fixture = smallFixture('Bad') as any
    fixture.statements[1].user = 'ghost@bad.example'
    fixture.quotas[1].values[0].period = '2026-13'
    const file = join(env.DATA_DIR, 'bad.json')
    writeFileSync(file, JSON.stringify(fixture))
    const result = runCli(['load', file], env)
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('/statements/1/user')
    expect(result.stderr).toContain('/quotas/1/values/0/period')
    // Nothing was written: not even an empty store, where DATA_DIR held none.
    expect(runCli(['companies', '--json'], env).stderr).toContain('no store at')
  })

  it('refuses a fixture holding an integer JSON would load as another, as the admin route refuses such a body', () => {
    const env = { DATA_DIR: tempDataDir() }
    const fixture = smallFixture('Big') as any
    fixture.data_tables[0].records.push({ deal_id: 'BIG', deal_name: 'Written by Python' })
    const file = join(env.DATA_DIR, 'big.json')
    // 2^53 + 1, as a client whose integers are exact writes it: JSON.parse reads 9007199254740992.
    writeFileSync(file, JSON.stringify(fixture).replace('"BIG"', '9007199254740993'))
    const result = runCli(['load', file], env)
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('an integer past 2^53 that a number holds only as 9007199254740992 (9007199254740993)')
    expect(runCli(['companies', '--json'], env).stderr).toContain('no store at')
    // The same number as JavaScript writes it, and so as it is kept, loads.
    writeFileSync(file, JSON.stringify(fixture).replace('"BIG"', '9007199254740992'))
    expect(runCli(['load', file], env).code).toBe(0)
  })

  it('loads no HTTP framework to read a fixture, though it refuses what the admin routes refuse', () => {
    const env = { DATA_DIR: tempDataDir() }
    const file = join(env.DATA_DIR, 'light.json')
    writeFileSync(file, JSON.stringify(smallFixture('Light')))
    // Fastify alone costs every command about 50 ms to load; a resolve hook says on stderr whether it was.
    const hook = `import { registerHooks } from 'node:module'
      registerHooks({ resolve(specifier, context, next) {
        const found = next(specifier, context)
        if (found.url.includes('/node_modules/fastify/')) process.stderr.write('fastify loaded\\n')
        return found
      } })`
    const result = runCli(['load', file], { ...env, NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(hook)}` })
    expect(result.code).toBe(0)
    expect(result.stderr).not.toContain('fastify loaded')
  })

  it('refuses a fixture that is not UTF-8, as the admin route refuses such a body, rather than load its text altered', () => {
    const env = { DATA_DIR: tempDataDir() }
    const fixture = smallFixture('Latin') as any
    fixture.data_tables[0].records.push({ deal_id: 'ACCENT', deal_name: 'José' })
    const file = join(env.DATA_DIR, 'latin1.json')
    // As an editor saving in ISO-8859-1 writes it: é is one byte, 0xE9, which read as UTF-8 would be U+FFFD.
    writeFileSync(file, JSON.stringify(fixture), 'latin1')
    const result = runCli(['load', file], env)
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(`${file}: cannot be read as JSON: it is not valid UTF-8`)
    expect(runCli(['companies', '--json'], env).stderr).toContain('no store at')
    writeFileSync(file, JSON.stringify(fixture))
    expect(runCli(['load', file], env).code).toBe(0)
  })

  it('refuses a fixture file that cannot be read or is not JSON with exit code 1, in one line and without the usage', () => {
    const env = { DATA_DIR: tempDataDir() }
    const file = join(env.DATA_DIR, 'broken.json')
    writeFileSync(file, '{bad')
    // `plans put` reads its file once the store is open: it needs one (`load` and `demo` read theirs before).
    expect(runCli(['demo', '--users', '5', '--months', '1', '--deals', '5'], env).code).toBe(0)
    for (const [args, problem] of [
      [['load', file], `${file}: cannot be read as JSON`],
      [['load', join(env.DATA_DIR, 'missing.json')], 'missing.json: cannot be read as JSON: ENOENT'],
      [['plans', 'put', '--company', 'c', file], `${file}: cannot be read as JSON`],
    ] as const) {
      const result = runCli([...args], env)
      expect(result.code, args.join(' ')).toBe(1)
      expect(result.stderr).toContain(problem)
      expect(result.stderr).not.toContain('Usage')
    }
  })

  it('plans put takes back a plan as plans --json prints it, its id included, and refuses another id; plans delete names it as stored', () => {
    const env = { DATA_DIR: tempDataDir() }
    const created = JSON.parse(runCli(['demo', '--users', '6', '--months', '2', '--deals', '10', '--json'], env).stdout)
    const [plan] = JSON.parse(runCli(['plans', '--company', created.company_id, '--json'], env).stdout)
    const file = join(env.DATA_DIR, 'plan.json')
    writeFileSync(file, JSON.stringify({ ...plan, rate: 0.07 }))
    const replaced = runCli(['plans', 'put', '--company', created.company_id, '--plan', plan.id, file, '--json'], env)
    expect(replaced.code, replaced.stderr).toBe(0)
    expect(JSON.parse(replaced.stdout).plan).toMatchObject({ id: plan.id, rate: 0.07 })

    writeFileSync(file, JSON.stringify({ ...plan, id: '0123456789abcdef01234567' }))
    const other = runCli(['plans', 'put', '--company', created.company_id, '--plan', plan.id, file], env)
    expect(other.code).toBe(1)
    expect(other.stderr).toContain("a plan's id does not change")
    // Without --plan, the definition of a new plan has no id; its problems are named as the fixture's are.
    const unnamed = runCli(['plans', 'put', '--company', created.company_id, file], env)
    expect(unnamed.code).toBe(1)
    expect(unnamed.stderr).toContain('unknown properties: id')

    // An id given in another letter case is named as the store keeps it.
    const deleted = runCli(['plans', 'delete', '--company', created.company_id, '--plan', plan.id.toUpperCase(), '--json'], env)
    expect(deleted.code, deleted.stderr).toBe(0)
    expect(JSON.parse(deleted.stdout)).toStrictEqual({ deleted: plan.id })
  })

  it('reads a JSON file that starts with a byte order mark, as the HTTP routes read such a body', () => {
    const env = { DATA_DIR: tempDataDir() }
    const file = join(env.DATA_DIR, 'bom.json')
    writeFileSync(file, `\uFEFF${JSON.stringify(smallFixture('Marked'))}`)
    const loaded = runCli(['load', file, '--json'], env)
    expect(loaded.code, loaded.stderr).toBe(0)
    expect(JSON.parse(runCli(['companies', '--json'], env).stdout)).toEqual([expect.objectContaining({ name: 'Marked' })])
  })

  it('refuses an argument left over, an option of another command, and an option past its bounds, as usage mistakes', () => {
    const env = { DATA_DIR: tempDataDir() }
    for (const [args, problem] of [
      [['load', 'a.json', 'b.json'], 'load takes at most 1 argument; left over: b.json'],
      [['companies', 'extra'], 'companies takes no argument; left over: extra'],
      [['clock', 'advance', '1000', 'extra'], 'clock advance takes at most 1 argument; left over: extra'],
      [['plans', 'delete', '--company', 'c', '--plan', 'p1', 'p2'], 'plans delete takes no argument; left over: p2'],
      [['keys', 'create', 'extra', '--company', 'c'], 'keys create takes no argument; left over: extra'],
      [['serve', 'extra'], 'serve takes no argument'],
      // Not left out in silence: without --company, reset puts every company back.
      [['reset', '--plan', 'p'], '--plan is not an option of reset'],
      [['imports', '--company', 'c', '--timeout', '5'], '--timeout is not an option of imports'],
      // A mistyped subcommand is named, not an option of the subcommand meant.
      [['plans', 'remove', '--company', 'c', '--plan', 'p'], 'plans expects no subcommand, put or delete'],
      [
        ['sync', '--base-url', 'http://127.0.0.1:46999', '--key', 'k', '--out', 'o', '--company', 'c'],
        '--company is not an option of sync',
      ],
      [['imports', 'drain', '--company', 'c', '--timeout', '99999999999'], '--timeout expects a whole number from 0 to 600000'],
      [['imports', '--company', 'c', '--limit', '0'], '--limit expects a whole number from 1 to 1000'],
      [['demo', '--users', '99999999999'], 'demo users must be an integer from 5'],
    ] as const) {
      const result = runCli([...args], env)
      expect(result.code, args.join(' ')).toBe(2)
      expect(result.stderr, args.join(' ')).toContain(problem)
    }
  })

  it('explains usage mistakes with exit code 2', () => {
    const env = { DATA_DIR: tempDataDir() }
    expect(runCli(['frobnicate'], env).code).toBe(2)
    expect(runCli(['structures'], env).stderr).toContain('--company is required')
    expect(runCli(['demo', '--users', 'many'], env).code).toBe(2)
    expect(runCli(['companies', '--bogus'], env).code).toBe(2)
    // Not Object.prototype's members: with what a client command needs, they would otherwise run as one.
    for (const name of ['toString', 'constructor', 'valueOf']) {
      const unknown = runCli([name, '--key', 'k', '--base-url', 'http://127.0.0.1:46999'], env)
      expect(unknown.code, name).toBe(2)
      expect(unknown.stderr).toContain(`unknown command ${name}`)
    }
  })

  it("tells a client command's unexpected failure in one line, beside a variable of the service's set wrong, which it does not read", async () => {
    // A service listing a structure, then answering its field schema in another shape: the sync meets an error it does not know.
    const structure = { id: '0123456789abcdef01234567', name: 'Quota', type: 'quota', environment: 'live', total_records: 1 }
    const server = createServer((request, response) =>
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(
          JSON.stringify(
            request.url?.startsWith('/v2/data-structures?') || request.url === '/v2/data-structures' ? { data: [structure] } : {},
          ),
        ),
    )
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
    try {
      const { port } = server.address() as AddressInfo
      const args = ['sync', '--base-url', `http://127.0.0.1:${port}`, '--key', 'cak_aaaaaaaaaaaaaaaaaaaaaaaa', '--out', tempDataDir()]
      const result = await runCliAsync(args, { PORT: 'not-a-port' })
      expect(result.code).toBe(1)
      expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^commission-api: TypeError: /)])
    } finally {
      server.close()
    }
  })

  it('stops on a DATA_DIR without a store rather than make an empty one, after telling usage mistakes', () => {
    const dataDir = join(tempDataDir(), 'mistyped')
    const env = { DATA_DIR: dataDir }
    for (const args of [['companies'], ['structures', '--company', 'x'], ['reset'], ['clock', 'advance', '1000']]) {
      const answer = runCli(args, env)
      expect(answer.code, args.join(' ')).toBe(1)
      expect(answer.stderr).toContain(`no store at ${join(dataDir, 'commission-api.sqlite')}`)
    }
    expect(runCli(['structures'], env).stderr).toContain('--company is required')
    // Nor does a backup write a copy of the empty store it ran on, to be taken for one of a store.
    const copy = join(tempDataDir(), 'backup.sqlite')
    expect(runCli(['backup', copy], env).stderr).toContain('no store at')
    expect(existsSync(copy)).toBe(false)
    // The commands that make a store read their fixture first: a mistake there makes none either.
    expect(runCli(['load'], env).code).toBe(2)
    expect(runCli(['load', join(dataDir, 'absent.json')], env).stderr).toContain('cannot be read as JSON')
    expect(runCli(['demo', '--users', 'many'], env).code).toBe(2)
    const refused = join(tempDataDir(), 'refused.json')
    writeFileSync(refused, JSON.stringify({ ...smallFixture('Refused'), company: {} }))
    const load = runCli(['load', refused], env)
    expect(load.code).toBe(1)
    expect(load.stderr).toContain('/company: must have required properties name')
    expect(existsSync(dataDir)).toBe(false)
    expect(runCli(['demo', '--users', '5', '--months', '1', '--deals', '5'], env).code).toBe(0)
    expect(runCli(['companies'], env).code).toBe(0)
  })

  it('stops on DATA_DIR=:memory:, a store none but its own process reads, rather than answer from an empty one', () => {
    // As testing.md lists it among the test mode's variables: the CLI would move, reset or list a store of its own.
    const env = { DATA_DIR: ':memory:', CLOCK: 'controlled' }
    for (const args of [['companies'], ['clock', 'advance', '300000'], ['reset'], ['structures', '--company', 'x']]) {
      const answer = runCli(args, env)
      expect([answer.code, answer.stdout], args.join(' ')).toEqual([1, ''])
      expect(answer.stderr).toContain('DATA_DIR: a store in memory')
    }
    expect(runCli(['clock', 'bogus'], env).code).toBe(2)
    // A load still checks a fixture there, and a demo still runs.
    expect(runCli(['demo', '--users', '5', '--months', '1', '--deals', '5'], env).code).toBe(0)
  })

  it('says a store too busy to write did nothing, and the command can run again', async () => {
    const env = { DATA_DIR: tempDataDir(), MONGODB_URL: '' }
    const created = runCli(['demo', '--users', '5', '--months', '1', '--deals', '5', '--json'], env)
    expect(created.code, created.stderr).toBe(0)
    // Another writer holds the embedded store's write lock past the CLI's wait (10 s).
    const holder = new DatabaseSync(join(env.DATA_DIR, 'commission-api.sqlite'))
    holder.exec('BEGIN IMMEDIATE')
    try {
      const refused = await runCliAsync(['keys', 'create', '--company', JSON.parse(created.stdout).company_id], env)
      expect(refused.code).toBe(1)
      expect(refused.stderr).toContain('the store is busy or out of reach; what failed was not done: run the command again')
    } finally {
      holder.exec('ROLLBACK')
      holder.close()
    }
  })

  it('works on the DATA_DIR of a running server, which sees what it wrote', async () => {
    const env = { DATA_DIR: tempDataDir(), DEMO: 'off' }
    const server = startServerProcess(env)
    try {
      const [, url] = await server.waitFor(/listening on (http:\/\/\S+)/)
      const created = runCli(['demo', '--users', '5', '--months', '1', '--deals', '5', '--json'], env)
      expect(created.code, created.stderr).toBe(0)
      const reply = await call(`${url}/v2/data-structures`, { key: JSON.parse(created.stdout).api_key })
      expect(reply.status).toBe(200)
    } finally {
      await server.stop()
    }
  })

  it('keys lists a company’s keys, and keys delete revokes one, which a running server then refuses', async () => {
    const env = { DATA_DIR: tempDataDir(), DEMO: 'off' }
    const file = join(env.DATA_DIR, 'fixture.json')
    writeFileSync(file, JSON.stringify(smallFixture('Keyed')))
    const loaded = JSON.parse(runCli(['load', file, '--json'], env).stdout)
    const other = JSON.parse(runCli(['demo', '--users', '5', '--months', '1', '--deals', '5', '--json'], env).stdout)
    const listed = runCli(['keys', '--company', loaded.company_id, '--json'], env)
    expect(listed.code, listed.stderr).toBe(0)
    const keys = JSON.parse(listed.stdout)
    expect(keys).toEqual([
      {
        id: expect.stringMatching(/^[0-9a-f]{24}$/),
        prefix: expect.any(String),
        user_id: expect.any(String),
        created_at: expect.any(String),
      },
      expect.objectContaining({ id: expect.any(String) }),
    ])
    expect(loaded.api_key.startsWith(keys[0].prefix)).toBe(true)
    expect(runCli(['keys', '--company', loaded.company_id], env).stdout).toContain(`${keys[1].id}  ${keys[1].prefix}…`)
    const theirs = JSON.parse(runCli(['keys', '--company', other.company_id, '--json'], env).stdout)
    const server = startServerProcess(env)
    try {
      const [, url] = await server.waitFor(/listening on (http:\/\/\S+)/)
      expect((await call(`${url}/v2/data-structures`, { key: loaded.api_key })).status).toBe(200)
      const revoked = runCli(['keys', 'delete', '--company', loaded.company_id, '--key', keys[0].id.toUpperCase(), '--json'], env)
      expect(revoked.code, revoked.stderr).toBe(0)
      expect(JSON.parse(revoked.stdout)).toEqual({ deleted: keys[0].id })
      // The server's cached authentication of the key expires within half a second; no bound is asserted here.
      let status = 200
      while (status === 200) {
        await sleep(20)
        status = (await call(`${url}/v2/data-structures`, { key: loaded.api_key })).status
      }
      expect(status).toBe(401)
      expect((await call(`${url}/v2/data-structures`, { key: other.api_key })).status).toBe(200)
    } finally {
      await server.stop()
    }
    expect(JSON.parse(runCli(['keys', '--company', loaded.company_id, '--json'], env).stdout)).toEqual([keys[1]])
    for (const key of [keys[0].id, theirs[0].id, loaded.api_key]) {
      const refused = runCli(['keys', 'delete', '--company', loaded.company_id, '--key', key], env)
      expect(refused.code, key).toBe(1)
      expect(refused.stderr, key).toContain('Not found: No API key')
      // A secret given where an id is expected is not repeated on the terminal.
      expect(refused.stderr).not.toContain(loaded.api_key)
    }
    expect(JSON.parse(runCli(['keys', '--company', other.company_id, '--json'], env).stdout)).toEqual(theirs)
    for (const [args, problem] of [
      [['keys', 'delete', '--company', loaded.company_id], '--key is required'],
      [['keys', 'delete', '--company', 'c', '--key', 'k', '--user', 'u'], '--user is not an option of keys delete'],
      [['keys', '--company', 'c', '--key', 'k'], '--key is not an option of keys'],
      [['keys', 'revoke', '--company', 'c'], 'keys expects no subcommand, create or delete'],
      [['keys', 'delete', 'extra', '--company', 'c', '--key', 'k'], 'keys delete takes no argument; left over: extra'],
    ] as const) {
      const result = runCli([...args], env)
      expect(result.code, args.join(' ')).toBe(2)
      expect(result.stderr, args.join(' ')).toContain(problem)
    }
  })
})
