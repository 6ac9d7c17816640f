#!/usr/bin/env node
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { companyInventory, createCompanyKey } from './admin/company-admin.ts'
import { changeQuotaType } from './admin/revisions.ts'
import { systemClock } from './clock.ts'
import { ConfigError, loadConfig } from './config.ts'
import { NotFoundError, ValidationError } from './errors.ts'
import { demoFixture } from './fixtures/demo.ts'
import { loadFixture } from './fixtures/load-fixture.ts'
import { startServer } from './server.ts'
import { closeWorkerOnSignals, startWorkerProcess } from './imports/worker-process.ts'
import { serveWorkerHealth } from './routes/worker-health.ts'
import { closeGracefullyOnSignals } from './shutdown.ts'
import { openStore } from './store/open-store.ts'
import { QUOTA_TYPES, type QuotaType } from './store/model.ts'
import type { Store } from './store/port.ts'

const USAGE = `Usage: commission-api <command> [options]   (npm run cli -- <command> [options])

Commands:
  serve [--role all|api|worker]           run the HTTP server and the import worker (what npm start runs);
                                          --role api: HTTP only; --role worker: the import worker only
  demo [--users N] [--months N] [--deals N] [--seed S]
                                          create a demo company; prints its id and API key
  load <fixture.json | ->                 create a company from a fixture (-: read it from standard input);
                                          prints its id and API key
  companies                               list the companies
  keys create --company ID [--user EMAIL] create an API key (for the company's first active user by default)
  structures --company ID                 every structure, quota and data table of a company, sandbox included
  quota-type --company ID --quota ID --type T
                                          change a quota's type (amount, percentage, float); values stay

Options:
  --json    print one JSON document on stdout
  --help    this text

Configuration comes from the environment (DATA_DIR, MONGODB_URL, ...): see the README.`

class UsageError extends Error {}

type Options = Record<string, string | boolean | undefined>

/** A command reads its options and returns what to print: a JSON-able value and its human form. */
type Command = (store: Store, positionals: string[], options: Options) => Promise<{ json: unknown; text: string }>

const integerOption = (options: Options, name: string): number | undefined => {
  const raw = options[name]
  if (raw === undefined) return undefined
  if (typeof raw !== 'string' || !/^\d+$/.test(raw)) throw new UsageError(`--${name} expects a whole number`)
  return Number(raw)
}

const requiredOption = (options: Options, name: string): string => {
  const raw = options[name]
  if (typeof raw !== 'string' || raw === '') throw new UsageError(`--${name} is required`)
  return raw
}

const created = (loaded: { company_id: string; api_keys: string[] }) => ({
  json: { company_id: loaded.company_id, api_key: loaded.api_keys[0] },
  text: `company_id: ${loaded.company_id}\napi_key:    ${loaded.api_keys[0]}`,
})

const COMMANDS: Record<string, Command> = {
  async demo(store, _positionals, options) {
    let fixture
    try {
      fixture = demoFixture({
        users: integerOption(options, 'users'),
        months: integerOption(options, 'months'),
        deals: integerOption(options, 'deals'),
        seed: typeof options.seed === 'string' ? options.seed : undefined,
      })
    } catch (error) {
      if (error instanceof RangeError) throw new UsageError(error.message)
      throw error
    }
    return created(await loadFixture(store, systemClock, fixture))
  },

  async load(store, positionals) {
    const [file] = positionals
    if (!file) throw new UsageError('load expects a fixture file, or - for standard input')
    let document: unknown
    try {
      // `-` reads standard input, so that a fixture on the host loads into a container: `exec -T ... load - < file`.
      document = JSON.parse(readFileSync(file === '-' ? 0 : file, 'utf8'))
    } catch (error) {
      throw new UsageError(`cannot read ${file === '-' ? 'standard input' : file} as JSON: ${(error as Error).message}`)
    }
    return created(await loadFixture(store, systemClock, document))
  },

  async companies(store) {
    const companies = (await store.companies.list()).map(({ id, name, public_api_enabled }) => ({ id, name, public_api_enabled }))
    const text = companies.map((company) => `${company.id}  ${company.name}${company.public_api_enabled ? '' : '  (public API off)'}`)
    return { json: companies, text: text.join('\n') || '(no company)' }
  },

  async keys(store, positionals, options) {
    if (positionals[0] !== 'create') throw new UsageError('keys expects the subcommand create')
    const user = typeof options.user === 'string' ? options.user : undefined
    const secret = await createCompanyKey(store, systemClock, requiredOption(options, 'company'), user)
    return { json: { api_key: secret }, text: secret }
  },

  async 'quota-type'(store, _positionals, options) {
    const type = requiredOption(options, 'type')
    if (!(QUOTA_TYPES as readonly string[]).includes(type)) throw new UsageError(`--type expects one of ${QUOTA_TYPES.join(', ')}`)
    const quota = await changeQuotaType(store, systemClock, requiredOption(options, 'company'), requiredOption(options, 'quota'), type as QuotaType)
    return { json: { id: quota.id, name: quota.name, type: quota.type }, text: `${quota.id}  ${quota.name}: type ${quota.type}` }
  },

  async structures(store, _positionals, options) {
    const inventory = await companyInventory(store, requiredOption(options, 'company'))
    const items = inventory.structures.map(({ id, name, type, environment, key }) => ({ id, name, type, environment, ...(key ? { key } : {}) }))
    const text = items.map((item) => `${item.id}  ${item.type.padEnd(19)} ${item.environment.padEnd(7)} ${item.name}${item.key ? ` (key ${item.key})` : ''}`)
    return { json: items, text: text.join('\n') }
  },
}

async function serve(role: unknown = 'all'): Promise<void> {
  if (role !== 'all' && role !== 'api' && role !== 'worker') throw new UsageError('--role expects all, api or worker')
  const config = loadConfig()
  if (role === 'worker') {
    const running = await startWorkerProcess(config)
    if (config.workerHealthPort === null) return closeWorkerOnSignals(running, config.shutdownTimeoutMs)
    const { served, url } = await serveWorkerHealth(running, config, systemClock)
    closeWorkerOnSignals(served, config.shutdownTimeoutMs)
    // Announced once a SIGTERM would close it gracefully.
    process.stdout.write(`commission-api import worker health and metrics on ${url}\n`)
    return
  }
  const server = await startServer(config, { role })
  closeGracefullyOnSignals(server, config.shutdownTimeoutMs)
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      json: { type: 'boolean' },
      help: { type: 'boolean' },
      users: { type: 'string' },
      months: { type: 'string' },
      deals: { type: 'string' },
      seed: { type: 'string' },
      company: { type: 'string' },
      user: { type: 'string' },
      quota: { type: 'string' },
      type: { type: 'string' },
      role: { type: 'string' },
    },
  })
  const [name, ...rest] = positionals
  if (values.help || !name) {
    console.log(USAGE)
    return values.help ? 0 : 2
  }
  if (name === 'serve') {
    await serve(values.role)
    return -1
  }
  const command = COMMANDS[name]
  if (!command) throw new UsageError(`unknown command ${name}`)
  const store = await openStore(loadConfig())
  try {
    const result = await command(store, rest, values)
    console.log(values.json ? JSON.stringify(result.json, null, 2) : result.text)
    return 0
  } finally {
    await store.close()
  }
}

function report(error: unknown): number {
  if (error instanceof UsageError || (error instanceof TypeError && 'code' in error)) {
    console.error(`commission-api: ${error.message}\n\n${USAGE}`)
    return 2
  }
  if (error instanceof ConfigError) console.error(error.message)
  else if (error instanceof ValidationError) {
    console.error(`Invalid input (${error.issues.length} problem${error.issues.length === 1 ? '' : 's'}):`)
    for (const issue of error.issues) console.error(`  ${issue.resource}: ${issue.description}`)
  } else if (error instanceof NotFoundError) console.error(`Not found: ${error.message}`)
  else console.error(error)
  return 1
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code
  },
  (error: unknown) => {
    process.exitCode = report(error)
  },
)
