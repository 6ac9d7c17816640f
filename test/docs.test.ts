import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { buildApp } from '../src/app.ts'
import { CommissionClient } from '../src/client/index.ts'
import { ManualClock } from '../src/clock.ts'
import { loadConfig } from '../src/config.ts'
import { loadFixture } from '../src/fixtures/load-fixture.ts'
import { INDEXES } from '../src/store/mongo/indexes.ts'
import { EXTRA_INDEXES } from '../src/store/mongo/mongo-store.ts'
import type { Store } from '../src/store/port.ts'
import { smallFixture } from './helpers/fixtures.ts'
import { openTestStore } from './helpers/test-store.ts'

/**
 * What the documentation promises and a test can hold it to: the README is a front page with the two commands,
 * every configuration variable, CLI command and admin route has its entry in docs/, the example of "Using it in
 * your tests" is the test file that runs, and every link works from a fresh clone.
 */

const ROOT = resolve(import.meta.dirname, '..')
const read = (path: string) => readFileSync(resolve(ROOT, path), 'utf8')
const PAGES = [
  'README.md',
  ...readdirSync(resolve(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
]

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{Letter}\p{Number}\- ]/gu, '')
    .replaceAll(' ', '-')

/** Runs `body` with the service's app on a test store, its admin routes behind ADMIN_TOKEN `docs-test-admin-token`. */
async function withAdminApp(body: (app: Awaited<ReturnType<typeof buildApp>>, store: Store) => Promise<void>): Promise<void> {
  const { store, dispose } = await openTestStore()
  const app = await buildApp({
    config: loadConfig({ DEMO: 'off', LOG_LEVEL: 'silent', ADMIN_TOKEN: 'docs-test-admin-token' }),
    store,
    clock: new ManualClock(),
  })
  try {
    await body(app, store)
  } finally {
    await app.close()
    await dispose()
  }
}

/** The anchors of a Markdown page: one per heading, outside code blocks. */
function anchorsOf(text: string): Set<string> {
  const withoutCode = text.replace(/```[\s\S]*?```/g, '')
  return new Set([...withoutCode.matchAll(/^#{1,6} (.+)$/gm)].map((match) => slug(match[1])))
}

/** The links of a Markdown page outside code blocks, except those to other sites. */
function linksOf(text: string): string[] {
  const withoutCode = text.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '')
  return [...withoutCode.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]).filter((target) => !/^[a-z]+:/.test(target))
}

describe('the README', () => {
  const readme = read('README.md')

  it('is a front page: what it is, the two commands, a first call, links to the rest', () => {
    expect(readme).toContain('npm install && npm start')
    expect(readme).toContain('npm test')
    expect(readme).toContain('## A first call with curl')
    expect(readme).toContain('curl -H "X-API-Key: $KEY" http://127.0.0.1:3000/v2/data-structures')
    for (const page of PAGES.filter((path) => path.startsWith('docs/'))) expect(readme, page).toContain(`](${page}`)
    expect(readme.split('\n').length).toBeLessThan(150)
  })
})

describe('the documentation', () => {
  it('links only to files and headings of the repository, which exist', () => {
    const broken: string[] = []
    let links = 0
    for (const page of PAGES) {
      for (const link of linksOf(read(page))) {
        links++
        const [path, anchor] = link.split('#')
        const target = path === '' ? resolve(ROOT, page) : resolve(ROOT, dirname(page), path)
        if (relative(ROOT, target).startsWith('..')) broken.push(`${page} → ${link}: outside the repository`)
        else if (!existsSync(target)) broken.push(`${page} → ${link}: no such file`)
        else if (anchor && target.endsWith('.md') && !anchorsOf(readFileSync(target, 'utf8')).has(anchor))
          broken.push(`${page} → ${link}: no such heading`)
      }
    }
    expect(links).toBeGreaterThan(50)
    expect(broken).toEqual([])
  })

  it('names no file outside the repository as the specification', () => {
    for (const page of PAGES) expect(read(page), page).not.toContain('../shared/')
  })

  it('shows the example of "Using it in your tests" exactly as test/using-it-in-your-tests.test.ts runs it', () => {
    const example = read('test/using-it-in-your-tests.test.ts')
    expect(read('docs/testing.md')).toContain(`\`\`\`ts\n${example}\`\`\``)
  })

  it('documents every configuration variable the service reads', () => {
    const variables = [...read('src/config.ts').matchAll(/read(?:<[^>]+>)?\('([A-Z_]+)'/g)].map((match) => match[1])
    expect(variables).toContain('CLOCK')
    const configuration = read('docs/configuration.md')
    for (const variable of variables) expect(configuration, variable).toContain(`| \`${variable}\` |`)
  })

  it('names every method of the TypeScript client in docs/clients.md', () => {
    const methods = Object.getOwnPropertyNames(CommissionClient.prototype).filter((name) => name !== 'constructor')
    expect(methods).toContain('syncSince')
    const clients = read('docs/clients.md')
    for (const method of methods) expect(clients, method).toMatch(new RegExp(`[\`.]${method}[\`(]`))
  })

  it("lists every index of the MongoDB adapter in its collection's row of docs/scaling.md", () => {
    const scaling = read('docs/scaling.md')
    const start = scaling.indexOf('| Collection | Unique rules | Indexes the queries use |')
    const table = scaling.slice(start, scaling.indexOf('\n\n', start))
    const rows = new Map<string, string>()
    for (const [, names, cells] of table.matchAll(/^\| (`[^|]+`) \|(.*)\|$/gm)) {
      for (const [, name] of names.matchAll(/`(\w+)`/g)) rows.set(name, cells)
    }
    for (const [collection, indexes] of new Map([...INDEXES, ...EXTRA_INDEXES])) {
      for (const index of indexes) {
        const fields = Object.keys(index.key)
        const written =
          index.expireAfterSeconds === undefined
            ? [`(${fields.join(', ')})`, ...(fields.length === 1 ? [`\`${fields[0]}\``] : [])]
            : [`TTL on \`${fields[0]}\``]
        expect(rows.get(collection) ?? '', `${collection}.${index.name}`).toSatisfy((row: string) =>
          written.some((form) => row.includes(form)),
        )
      }
    }
  })

  it('documents every CLI command', () => {
    const cli = read('src/cli.ts')
    const commands = ['serve']
    for (const table of ['COMMANDS', 'CLIENT_COMMANDS']) {
      const start = cli.indexOf(`const ${table}: Record<string,`)
      const block = cli.slice(start, cli.indexOf('\n}\n', start))
      commands.push(...[...block.matchAll(/^ {2}async '?([\w-]+)'?\(/gm)].map((match) => match[1]))
    }
    commands.push(...[...cli.matchAll(/^CLIENT_COMMANDS\.(\w+) =/gm)].map((match) => match[1]))
    expect(commands).toEqual(expect.arrayContaining(['serve', 'demo', 'plans', 'exchange-rates', 'sync', 'conformance']))
    const documented = read('docs/cli.md')
    for (const command of commands) expect(documented, command).toMatch(new RegExp(`^\\| \`${command}[ \`]`, 'm'))
    // And every option each command takes (its OPTIONS entry), in the rows of that command.
    const start = cli.indexOf('const OPTIONS: Record<string, readonly string[]> = {')
    const entries = [...cli.slice(start, cli.indexOf('\n}\n', start)).matchAll(/^ {2}'?([\w -]+)'?: \[(.*)\],$/gm)]
    expect(entries.length).toBeGreaterThan(10)
    for (const [, command, list] of entries) {
      const rows = documented.split('\n').filter((line) => line.startsWith(`| \`${command}`))
      for (const [, option] of list.matchAll(/'([\w-]+)'/g)) expect(rows.join('\n'), `${command} --${option}`).toContain(`--${option}`)
    }
  })

  it("runs the CLI as docs/cli.md says with stdout holding only the command's answer, as --json needs", () => {
    const command = /^`(npm run [^`]*) -- <command>`/m.exec(read('docs/cli.md'))?.[1]
    expect(command).toBeDefined()
    const run = spawnSync(`${command} -- --help`, { cwd: ROOT, shell: true, encoding: 'utf8', timeout: 60_000 })
    expect(run.status, run.stderr).toBe(0)
    expect(run.stdout).toMatch(/^Usage: commission-api /)
  })

  it('names only routes the service has', async () => {
    await withAdminApp(async (app, store) => {
      // v1 and v2 tell an unknown route only to a valid key.
      const {
        api_keys: [key],
      } = await loadFixture(store, new ManualClock(), smallFixture('Docs'))
      const headers = { authorization: 'Bearer docs-test-admin-token', 'x-api-key': key }
      const missing: string[] = []
      for (const page of PAGES) {
        for (const [mention, method, path] of read(page).matchAll(/`(GET|HEAD|POST|PUT|PATCH|DELETE) (\/[^`\s?]*)/g)) {
          // docs/interface.md's example of a 405: a known path with another method.
          if (mention === '`DELETE /v2/data-structures') continue
          const url = path.replace(/\{[^}]+\}|…|\*/g, '6b0a1229ba1b2162f5efe978')
          const answer = await app.inject({ method: method as 'GET', url, headers })
          const unrouted = answer.statusCode === 404 && answer.body.includes('"resource":"route"')
          if (unrouted || answer.statusCode === 405) missing.push(`${page}: ${mention.slice(1)}`)
        }
      }
      expect(missing).toEqual([])
    })
  })

  it('documents every admin route', async () => {
    await withAdminApp(async (app) => {
      await app.ready()
      const paths = (app.swagger() as { paths: Record<string, Record<string, unknown>> }).paths
      const routes = Object.entries(paths)
        .filter(([path]) => path.startsWith('/admin/'))
        .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`))
      expect(routes).toContain('POST /admin/companies/{id}/imports/drain')
      const documented = read('docs/admin.md')
      for (const route of routes) expect(documented, route).toMatch(new RegExp(`\`${route.replace(/[{}?]/g, '\\$&')}[\`?]`))
    })
  })
})
