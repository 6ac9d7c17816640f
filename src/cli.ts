#!/usr/bin/env node
import { isUtf8 } from 'node:buffer'
import { readFileSync, statSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { setFlagsFromString } from 'node:v8'
import pino from 'pino'
import { clockState, moveClock } from './admin/clock.ts'
import { companyInventory, companyKeys, createCompanyKey, existingCompany, revokeCompanyKey } from './admin/company-admin.ts'
import { DEFAULT_DRAIN_TIMEOUT_MS, drainImports, listImports, MAX_DRAIN_TIMEOUT_MS, MAX_LISTED_IMPORTS } from './admin/imports.ts'
import { type ResetOutcome, resetCompany, resetEveryCompany } from './admin/reset.ts'
import {
  calculationProblems,
  deletePlan,
  listPlans,
  replacementDefinition,
  type ReplacementPlan,
  ReplacementPlanSchema,
  savePlan,
  setExchangeRates,
} from './admin/plans.ts'
import { changeQuotaType } from './admin/data-edits.ts'
import { ApiError, ConnectionError } from './client/errors.ts'
import type { CommissionClient } from './client/index.ts'
import { type Clock, clockFor } from './clock.ts'
import { type Config, ConfigError, IN_MEMORY, loadConfig, TEST_MODE_DEFAULTS, withTestModeDefaults } from './config.ts'
import { NotFoundError, TimedOutError, ValidationError } from './errors.ts'
import { demoFixture } from './fixtures/demo.ts'
import { fixtureProblems, loadFixture, schemaProblems } from './fixtures/load-fixture.ts'
import { type FixturePlan, FixturePlanSchema } from './fixtures/schema.ts'
import { MOVED_CLOCK_WARNING, movedClockOffset, startServer } from './server.ts'
import { composeImportWorker } from './imports/compose-worker.ts'
import { startupFailure } from './startup-errors.ts'
import { loggerOptions, surviveClosedOutput } from './logger.ts'
import { openStore, sqliteFile, storeDescription } from './store/open-store.ts'
import { markingInexactIntegers, unstorableJsonRefusal } from './routes/json-body.ts'
import { IMPORT_STATUSES, type ImportStatus, QUOTA_TYPES, type QuotaType } from './store/model.ts'
import { type Store, StoreBusyError, StoreFullError, StoreUnconfirmedError } from './store/port.ts'
import { SyncDirectoryError } from './sync/state.ts'

const USAGE = `Usage: commission-api <command> [options]   (npm run -s cli -- <command> [options])

Commands:
  serve [--role all|api|worker] [--test-mode]
                                          run the HTTP server and the import worker (what npm start runs);
                                          --role api: HTTP only; --role worker: the import worker only;
                                          --test-mode: a stand-in for tests (controlled clock, in-memory store,
                                          fixed admin token and demo key)
  demo [--users N] [--months N] [--deals N] [--seed S]
                                          create a demo company; prints its id and API key
  load <fixture.json | ->                 create a company from a fixture (-: read it from standard input);
                                          prints its id and API key
  companies                               list the companies
  backup <file>                           copy the embedded store into a new file, whole and consistent while
                                          servers run and write (MongoDB: use its own tools)
  keys --company ID                       the company's API keys: id, prefix, owner, creation time
  keys create --company ID [--user EMAIL] create an API key (for the company's first active user by default)
  keys delete --company ID --key KEY_ID   revoke an API key: refused from then on (by running servers within
                                          half a second)
  structures --company ID                 every structure, quota and data table of a company, sandbox included
  quota-type --company ID --quota ID --type T
                                          change a quota's type (amount, percentage, float); values stay
  plans --company ID                      the company's plans, as defined
  plans put --company ID [--plan ID] <plan.json | ->
                                          create a plan (or replace the plan ID) and calculate it
  plans delete --company ID --plan ID     delete a plan and its pending results
  exchange-rates --company ID [CUR=RATE ...]
                                          replace the exchange rates (one CUR is worth RATE of the default
                                          currency) and recalculate; without rates, show them
  calculation-problems --company ID       what keeps records or cells of each plan from being calculated
  clock [advance MS | set ISO]            the service's clock; with CLOCK=controlled, move it ahead for every
                                          process sharing the store
  imports --company ID [--status S] [--limit N]
                                          the company's imports with their details, newest first
  imports drain --company ID [--timeout MS]
                                          close the company's debounce windows, run its pending imports, and
                                          print them once none is scheduled or running
  reset [--company ID]                    put the company (every company without --company) back to the
                                          fixture it was created from, with the same ids and keys

Commands that talk to a running service (this one or the real one) at --base-url, with --key (or the
COMMISSION_API_KEY variable); they pace themselves to --rate requests per second (default 40):
  sync --base-url URL --key KEY --out DIR [--since ISO] [--format ndjson|csv] [--page-size N] [--rate N]
                                          export every live structure to DIR, one file each; the next run
                                          reads only what changed; an interrupted run resumes
  conformance --base-url URL --key KEY [--write] [--table KEY] [--rate N]
                                          check the service against the specification: a table of checks
                                          ending with "N passed, N failed"; exit code 1 on any failure.
                                          --write adds upsert, import and archive checks: a test company only

Options:
  --json    print one JSON document on stdout
  --help    this text

Configuration comes from the environment (DATA_DIR, MONGODB_URL, ...): see docs/configuration.md.`

class UsageError extends Error {}

type Options = Record<string, string | boolean | undefined>

/**
 * How many arguments each command takes after its name, at most (files, `CUR=RATE` pairs), or after each of its
 * subcommands: one more is a usage mistake rather than a file or a value silently left out. A command not listed
 * takes none; an unknown command or subcommand is refused by its name.
 */
const MOST_ARGUMENTS: Record<string, number | Record<string, number>> = {
  load: 1,
  backup: 1,
  'exchange-rates': Number.POSITIVE_INFINITY,
  keys: { create: 0, delete: 0 },
  plans: { put: 1, delete: 0 },
  clock: { advance: 1, set: 1 },
  imports: { drain: 0 },
}

/**
 * The options each command takes, by command or by `command subcommand`; `--json` and `--help` are every command's.
 * Another one is a usage mistake rather than an option silently left out: `reset --plan ID` resets every company.
 */
const OPTIONS: Record<string, readonly string[]> = {
  serve: ['role', 'test-mode'],
  demo: ['users', 'months', 'deals', 'seed'],
  keys: ['company'],
  'keys create': ['company', 'user'],
  'keys delete': ['company', 'key'],
  structures: ['company'],
  'quota-type': ['company', 'quota', 'type'],
  plans: ['company'],
  'plans put': ['company', 'plan'],
  'plans delete': ['company', 'plan'],
  'exchange-rates': ['company'],
  'calculation-problems': ['company'],
  imports: ['company', 'status', 'limit'],
  'imports drain': ['company', 'timeout'],
  reset: ['company'],
  sync: ['base-url', 'key', 'out', 'since', 'format', 'page-size', 'rate'],
  conformance: ['base-url', 'key', 'write', 'table', 'rate'],
}

function refuseOptionsOfOthers(name: string, rest: readonly string[], options: Options): void {
  // A subcommand the command does not know is its own to refuse, by name (not by an option of a subcommand it has).
  const subcommands = Object.hasOwn(MOST_ARGUMENTS, name) ? MOST_ARGUMENTS[name] : 0
  if (typeof subcommands === 'object' && rest[0] !== undefined && !Object.hasOwn(subcommands, rest[0])) return
  const subcommand = `${name} ${rest[0]}`
  const command = Object.hasOwn(OPTIONS, subcommand) ? subcommand : name
  const taken = Object.hasOwn(OPTIONS, command) ? OPTIONS[command] : []
  const other = Object.keys(options).find((option) => option !== 'json' && option !== 'help' && !taken.includes(option))
  if (other !== undefined) throw new UsageError(`--${other} is not an option of ${command}`)
}

function refuseLeftOverArguments(name: string, rest: readonly string[]): void {
  const taken = Object.hasOwn(MOST_ARGUMENTS, name) ? MOST_ARGUMENTS[name] : 0
  const [subcommand, ...after] = rest
  const bySubcommand = typeof taken === 'object'
  // A subcommand the command does not know is its own to refuse, by name.
  if (bySubcommand && (subcommand === undefined || !Object.hasOwn(taken, subcommand))) return
  const [command, most, given] = bySubcommand ? [`${name} ${subcommand}`, taken[subcommand], after] : [name, taken, rest]
  if (given.length <= most) return
  const takes = most === 0 ? 'no argument' : `at most ${most} argument${most === 1 ? '' : 's'}`
  throw new UsageError(`${command} takes ${takes}; left over: ${given.slice(most).join(' ')}`)
}

/** A command reads its options and returns what to print: a JSON-able value and its human form. */
type Command = (store: Store, positionals: string[], options: Options, context: CommandContext) => Promise<{ json: unknown; text: string }>

/** What a command that opens the store works with besides it. */
interface CommandContext {
  config: Config
  /** The clock `CLOCK` names: the controlled one tells the time of every process sharing the store. */
  clock: Clock
  /** What the command read before the store opened (`INPUTS`); undefined for the others. */
  input?: unknown
}

/**
 * The commands that make the embedded store where there is none yet (every other one works on what a store holds),
 * and what each reads before it opens the store, so that a usage mistake, an unreadable file or a refused fixture
 * makes no empty one: the fixture it loads.
 */
const INPUTS: Record<string, (positionals: string[], options: Options, config: Config) => unknown> = {
  demo(_positionals, options) {
    try {
      return demoFixture({
        users: integerOption(options, 'users'),
        months: integerOption(options, 'months'),
        deals: integerOption(options, 'deals'),
        seed: typeof options.seed === 'string' ? options.seed : undefined,
      })
    } catch (error) {
      if (error instanceof RangeError) throw new UsageError(error.message)
      throw error
    }
  },
  async load([file], _options, config) {
    if (!file) throw new UsageError('load expects a fixture file, or - for standard input')
    const fixture = readJson(file)
    // Where there is no store yet (a mistyped DATA_DIR, most likely), a fixture the load would refuse makes none.
    if (missingStore(config)) {
      const problems = await fixtureProblems(fixture, new Date().toISOString())
      if (problems.length > 0) throw new ValidationError(problems)
    }
    return fixture
  },
}

/**
 * A command that talks to a running service through the client: it opens no store. The client and the modules of
 * these commands are loaded when one runs: `serve` and the store's commands never need them (undici alone is about
 * 6 MiB of a server's memory: "Memory" in docs/performance.md).
 */
type ClientCommand = (client: CommissionClient, options: Options) => Promise<{ json: unknown; text: string; exitCode?: number }>

const integerOption = (options: Options, name: string): number | undefined => {
  const raw = options[name]
  if (raw === undefined) return undefined
  if (typeof raw !== 'string' || !/^\d+$/.test(raw)) throw new UsageError(`--${name} expects a whole number`)
  return Number(raw)
}

/** A whole-number option that must lie in [min, max]: a usage mistake otherwise, before anything is sent. */
const boundedOption = (options: Options, name: string, min: number, max: number): number | undefined => {
  const value = integerOption(options, name)
  if (value !== undefined && (value < min || value > max)) throw new UsageError(`--${name} expects a whole number from ${min} to ${max}`)
  return value
}

const requiredOption = (options: Options, name: string): string => {
  const raw = options[name]
  if (typeof raw !== 'string' || raw === '') throw new UsageError(`--${name} is required`)
  return raw
}

/**
 * A JSON document from a file, or from standard input for `-` (so that `exec -T ... load - < file` works). A file
 * that cannot be read, or is not JSON, is refused input (exit 1), as an invalid fixture is, not a usage mistake.
 */
function readJson(file: string): unknown {
  let text: string
  let document: unknown
  try {
    const bytes = readFileSync(file === '-' ? 0 : file)
    // Read as UTF-8 anyway, an ISO-8859-1 é would be loaded as U+FFFD (two emails one), where the admin routes refuse
    // a body that is not UTF-8.
    if (!isUtf8(bytes)) throw new Error('it is not valid UTF-8 (save it as UTF-8)')
    // A byte order mark, which some editors write, is not JSON; the HTTP routes take a body with one too.
    text = bytes.toString('utf8').replace(/^\uFEFF/, '')
    document = JSON.parse(text)
  } catch (error) {
    throw new ValidationError({
      resource: file === '-' ? 'standard input' : file,
      description: `cannot be read as JSON: ${(error as Error).message}`,
    })
  }
  // Refused as the admin routes refuse such a body: an integer JSON.parse rounds (a Python-written id past 2^53)
  // would be loaded as another value, silently.
  const refusal = unstorableJsonRefusal(markingInexactIntegers(text, document))
  if (refusal) throw refusal
  return document
}

const created = (loaded: { company_id: string; api_keys: string[] }) => ({
  json: { company_id: loaded.company_id, api_key: loaded.api_keys[0] },
  text: `company_id: ${loaded.company_id}\napi_key:    ${loaded.api_keys[0]}`,
})

/** The clock as the `clock` command prints it. */
const shownClock = (state: { mode: string; now: string }) => ({ json: state, text: `${state.now}  (${state.mode})` })

/** What a reset did to a company, as a line of text. */
function resetText(outcome: ResetOutcome): string {
  if (outcome.reset) return 'reset'
  if (!outcome.problems) return 'left as it is (created before fixtures were kept)'
  const problems = outcome.problems.map((problem) => `${problem.resource}: ${problem.description}`).join('; ')
  return `left as it is (its fixture is refused now: ${problems})`
}

/** The commands that only read the store: nothing they do is stamped, so a moved controlled clock is no concern of theirs. */
const WRITING_NOTHING: ReadonlySet<string> = new Set(['backup', 'companies', 'structures', 'calculation-problems'])

const COMMANDS: Record<string, Command> = {
  async demo(store, _positionals, _options, { clock, input }) {
    return created(await loadFixture(store, clock, input))
  },

  async load(store, _positionals, _options, { clock, input }) {
    return created(await loadFixture(store, clock, input))
  },

  async backup(store, [file], _options, { config }) {
    if (!file) throw new UsageError('backup expects the file to write: backup <file>')
    if (config.dataDir === IN_MEMORY)
      throw new ValidationError({
        resource: 'DATA_DIR',
        description: 'a store in memory lives in its process only: there is nothing to copy',
      })
    if (!store.backupTo)
      throw new ValidationError({ resource: 'store', description: "a MongoDB store is backed up with MongoDB's own tools (mongodump)" })
    try {
      await store.backupTo(file)
    } catch (error) {
      const reason =
        (error as NodeJS.ErrnoException).code === 'EEXIST' ? 'it exists: a backup goes to a new file' : (error as Error).message
      throw new ValidationError({ resource: 'file', description: `cannot write ${file}: ${reason}` })
    }
    const bytes = statSync(file).size
    return { json: { file, bytes }, text: `${file}: ${bytes} bytes, every write committed when it began` }
  },

  async companies(store) {
    const companies = (await store.companies.list()).map(({ id, name, public_api_enabled }) => ({ id, name, public_api_enabled }))
    const text = companies.map((company) => `${company.id}  ${company.name}${company.public_api_enabled ? '' : '  (public API off)'}`)
    return { json: companies, text: text.join('\n') || '(no company)' }
  },

  async keys(store, positionals, options, { clock }) {
    const companyId = requiredOption(options, 'company')
    const [subcommand] = positionals
    if (subcommand === undefined) {
      const keys = await companyKeys(store, companyId)
      const text = keys.map((key) => `${key.id}  ${key.prefix}…  user ${key.user_id}  created ${key.created_at}`)
      return { json: keys, text: text.join('\n') || '(no key)' }
    }
    if (subcommand === 'delete') {
      const deleted = await revokeCompanyKey(store, companyId, requiredOption(options, 'key'))
      return { json: { deleted }, text: `revoked ${deleted}` }
    }
    if (subcommand !== 'create') throw new UsageError('keys expects no subcommand, create or delete')
    const user = typeof options.user === 'string' ? options.user : undefined
    const secret = await createCompanyKey(store, clock, companyId, user)
    return { json: { api_key: secret }, text: secret }
  },

  async 'quota-type'(store, _positionals, options, { clock }) {
    const type = requiredOption(options, 'type')
    if (!(QUOTA_TYPES as readonly string[]).includes(type)) throw new UsageError(`--type expects one of ${QUOTA_TYPES.join(', ')}`)
    const quota = await changeQuotaType(
      store,
      clock,
      requiredOption(options, 'company'),
      requiredOption(options, 'quota'),
      type as QuotaType,
    )
    return { json: { id: quota.id, name: quota.name, type: quota.type }, text: `${quota.id}  ${quota.name}: type ${quota.type}` }
  },

  async plans(store, positionals, options, { clock }) {
    const companyId = requiredOption(options, 'company')
    const [subcommand, file] = positionals
    if (subcommand === undefined) {
      const plans = await listPlans(store, companyId)
      return {
        json: plans,
        text:
          plans.map((plan) => `${plan.id}  ${plan.environment}  ${plan.name} (${plan.frequency}, ${plan.data_table})`).join('\n') ||
          '(no plan)',
      }
    }
    if (subcommand === 'delete') {
      const deleted = await deletePlan(store, companyId, requiredOption(options, 'plan'))
      return { json: { deleted }, text: `deleted ${deleted}` }
    }
    if (subcommand !== 'put') throw new UsageError('plans expects no subcommand, put or delete')
    if (!file) throw new UsageError('plans put expects a plan file, or - for standard input')
    const document = readJson(file)
    const plan = typeof options.plan === 'string' ? options.plan : undefined
    // A replacement may keep the id that `plans --json` shows, as the HTTP route's body may.
    const errors = await schemaProblems(plan === undefined ? FixturePlanSchema : ReplacementPlanSchema, document)
    if (errors.length > 0) throw new ValidationError(errors)
    const definition = plan === undefined ? (document as FixturePlan) : replacementDefinition(document as ReplacementPlan, plan)
    const change = await savePlan(store, clock, companyId, definition, plan)
    const described = change.plan
    const { cells, statements_written: statements, lines_written: lines, problems } = change.calculation
    return {
      json: { plan: described, calculation: change.calculation },
      text: `${described.id}  ${described.name}: ${cells} cells calculated, ${statements} statements and ${lines} lines written, ${problems.length} problems`,
    }
  },

  async 'exchange-rates'(store, positionals, options, { clock }) {
    const companyId = requiredOption(options, 'company')
    if (positionals.length === 0) {
      const rates = (await existingCompany(store, companyId)).exchange_rates ?? {}
      return {
        json: rates,
        text:
          Object.entries(rates)
            .map(([currency, rate]) => `${currency}=${rate}`)
            .join('\n') || '(no rate)',
      }
    }
    const rates: Record<string, number> = {}
    for (const pair of positionals) {
      const match = /^([A-Z]{3})=(\d+(?:\.\d+)?)$/.exec(pair)
      if (!match) throw new UsageError(`exchange-rates expects CUR=RATE pairs such as USD=0.92, got ${pair}`)
      rates[match[1]] = Number(match[2])
    }
    const result = await setExchangeRates(store, clock, companyId, rates)
    return { json: result, text: `${Object.keys(rates).length} rates set; ${result.calculation.cells} cells recalculated` }
  },

  async 'calculation-problems'(store, _positionals, options) {
    const byPlan = await calculationProblems(store, requiredOption(options, 'company'))
    const text = byPlan.flatMap(({ plan, problems }) =>
      problems.map((problem) => `${plan}: ${problem.record ? `record ${problem.record}: ` : ''}${problem.message}`),
    )
    return { json: byPlan, text: text.join('\n') || '(no problem)' }
  },

  async clock(_store, positionals, _options, { clock }) {
    const [subcommand, value] = positionals
    if (subcommand === undefined) return shownClock(await clockState(clock))
    if (subcommand === 'advance') {
      if (!value || !/^\d+$/.test(value)) throw new UsageError('clock advance expects a whole number of milliseconds')
      return shownClock(await moveClock(clock, { advance_ms: Number(value) }))
    }
    if (subcommand === 'set') {
      if (!value) throw new UsageError('clock set expects an ISO 8601 instant, such as 2027-01-31T10:00:00Z')
      return shownClock(await moveClock(clock, { set: value }))
    }
    throw new UsageError('clock expects no subcommand, advance MS or set ISO')
  },

  async imports(store, positionals, options, { config, clock }) {
    const companyId = requiredOption(options, 'company')
    const [subcommand] = positionals
    let listed
    if (subcommand === 'drain') {
      // This command runs the imports itself, beside any worker on the store: it needs no server. What goes wrong in
      // a run (an import failed on an internal error, whose reference its details give) is logged on stderr.
      const worker = composeImportWorker({ store, clock, config, logger: stderrLogger(config) })
      try {
        const timeout = boundedOption(options, 'timeout', 0, MAX_DRAIN_TIMEOUT_MS) ?? DEFAULT_DRAIN_TIMEOUT_MS
        listed = await drainImports(store, clock, worker, companyId, timeout)
      } finally {
        // Past its timeout the drain answers while its own run goes on: the store stays open until that run ends.
        await worker.idle()
      }
    } else if (subcommand === undefined) {
      const status = options.status
      if (status !== undefined && !(IMPORT_STATUSES as readonly unknown[]).includes(status))
        throw new UsageError(`--status expects one of ${IMPORT_STATUSES.join(', ')}`)
      const limit = boundedOption(options, 'limit', 1, MAX_LISTED_IMPORTS)
      listed = await listImports(store, companyId, { status: status as ImportStatus | undefined, limit })
    } else throw new UsageError('imports expects no subcommand, or drain')
    const text = listed.data.map(
      (data) => `${data.id}  ${data.target.padEnd(8)} ${data.status.padEnd(9)} ${data.error ? 'error' : 'ok'}  created ${data.created_at}`,
    )
    return { json: listed, text: text.join('\n') || '(no import)' }
  },

  async reset(store, _positionals, options) {
    const outcomes = typeof options.company === 'string' ? [await resetCompany(store, options.company)] : await resetEveryCompany(store)
    const text = outcomes.map((outcome) => `${outcome.id}  ${outcome.name}: ${resetText(outcome)}`)
    return { json: outcomes, text: text.join('\n') || '(no company)' }
  },

  async structures(store, _positionals, options) {
    const inventory = await companyInventory(store, requiredOption(options, 'company'))
    const items = inventory.structures.map(({ id, name, type, environment, ...item }) => ({
      id,
      name,
      type,
      environment,
      ...('key' in item ? { key: item.key } : {}),
    }))
    const text = items.map(
      (item) => `${item.id}  ${item.type.padEnd(19)} ${item.environment.padEnd(7)} ${item.name}${item.key ? ` (key ${item.key})` : ''}`,
    )
    return { json: items, text: text.join('\n') }
  },
}

const CLIENT_COMMANDS: Record<string, ClientCommand> = {
  async sync(client, options) {
    // Without --format, the directory's own format (ndjson for a new one).
    const format = options.format
    if (format !== undefined && format !== 'ndjson' && format !== 'csv') throw new UsageError('--format expects ndjson or csv')
    const since = typeof options.since === 'string' ? await instantOption('since', options.since) : null
    const outDir = requiredOption(options, 'out')
    const [{ syncStructures }, { terminalProgress }] = await Promise.all([import('./sync/sync.ts'), import('./sync/progress.ts')])
    const outcomes = await syncStructures(client, {
      outDir,
      format,
      since,
      limit: boundedOption(options, 'page-size', 1, 2000),
      progress: terminalProgress(process.stderr),
    }).catch((error: unknown) => {
      throw fileSystemError(error) ? new SyncDirectoryError(`cannot write to --out ${outDir}: ${error.message}`, { cause: error }) : error
    })
    const text = outcomes.map(
      (outcome) =>
        `${outcome.file}  ${outcome.name}: ${outcome.kind}${outcome.resumed ? ' (resumed)' : ''}, ${outcome.fetched} rows read, ${outcome.rows} in the file`,
    )
    return { json: outcomes, text: text.join('\n') || '(no live structure)' }
  },
}

CLIENT_COMMANDS.conformance = async (client, options) => {
  const [{ formatReport, runConformance }, { WRITE_WARNING }] = await Promise.all([
    import('./conformance/conformance.ts'),
    import('./conformance/write-checks.ts'),
  ])
  if (options.write) console.error(`commission-api: ${WRITE_WARNING}`)
  const checked = await runConformance(client, {
    write: options.write === true,
    table: typeof options.table === 'string' ? options.table : undefined,
  })
  return { json: checked, text: formatReport(checked), exitCode: checked.failed > 0 ? 1 : 0 }
}

/** The log of a command that runs imports: on stderr, warnings and errors only at LOG_LEVEL info (the default); another level as it is. */
const stderrLogger = (config: Config) => pino(loggerOptions(config.logLevel === 'info' ? 'warn' : config.logLevel), pino.destination(2))

/** An error of the file system (a full disk, a directory that cannot be written), as Node reports them. */
const fileSystemError = (error: unknown): error is NodeJS.ErrnoException =>
  error instanceof Error && typeof (error as NodeJS.ErrnoException).syscall === 'string'

async function instantOption(name: string, raw: string): Promise<string> {
  const { instantParam } = await import('./client/index.ts')
  try {
    return instantParam(name, raw)!
  } catch (error) {
    throw new UsageError(`--${(error as Error).message}`, { cause: error })
  }
}

async function clientOf(options: Options): Promise<CommissionClient> {
  const key = typeof options.key === 'string' ? options.key : process.env.COMMISSION_API_KEY
  if (!key) throw new UsageError('--key (or the COMMISSION_API_KEY variable) is required')
  const baseUrl = requiredOption(options, 'base-url')
  if (!/^https?:\/\/[^/]/i.test(baseUrl)) throw new UsageError('--base-url expects an http or https URL')
  const { CommissionClient } = await import('./client/index.ts')
  return new CommissionClient({ baseUrl, apiKey: key, requestsPerSecond: boundedOption(options, 'rate', 1, 1000) ?? 40 })
}

async function serve(role: unknown = 'all', testMode = false): Promise<void> {
  if (role !== 'all' && role !== 'api' && role !== 'worker') throw new UsageError('--role expects all, api or worker')
  const config = loadConfig(testMode ? withTestModeDefaults(process.env) : process.env)
  if (config.dataDir === IN_MEMORY && !config.mongodbUrl && role !== 'all') {
    throw new UsageError(`DATA_DIR=${IN_MEMORY} keeps the data in this one process: --role ${role} needs a store other processes open`)
  }
  // V8 may decide to allocate what a busy site allocates straight in the old generation. In about half the processes
  // started, the v2 pages' bytes then piled up (90 MiB of buffers) until full collections, and a walk ran a third
  // slower; without that heuristic of the collector, no process did (docs/performance.md, "Compression"). Set here,
  // before the server allocates, it holds for every way `serve` starts, the import worker's thread included.
  setFlagsFromString('--no-allocation-site-pretenuring')
  // The token is printed only when it is the test mode's own: a token set in the environment stays out of the output.
  await startServer(config, { role, testMode: testMode && config.adminToken === TEST_MODE_DEFAULTS.ADMIN_TOKEN, closeOnSignals: true })
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
      plan: { type: 'string' },
      type: { type: 'string' },
      role: { type: 'string' },
      'test-mode': { type: 'boolean' },
      status: { type: 'string' },
      limit: { type: 'string' },
      timeout: { type: 'string' },
      'base-url': { type: 'string' },
      key: { type: 'string' },
      rate: { type: 'string' },
      out: { type: 'string' },
      since: { type: 'string' },
      format: { type: 'string' },
      'page-size': { type: 'string' },
      write: { type: 'boolean' },
      table: { type: 'string' },
    },
  })
  const [name, ...rest] = positionals
  if (values.help || !name) {
    console.log(USAGE)
    return values.help ? 0 : 2
  }
  if (name === 'serve') {
    refuseLeftOverArguments(name, rest)
    refuseOptionsOfOthers(name, rest, values)
    await serve(values.role, values['test-mode'] === true)
    return -1
  }
  if (values['test-mode']) throw new UsageError('--test-mode is an option of serve')
  // Own properties only: a command named like an Object.prototype member (`toString`) is unknown, not inherited.
  const clientCommand = Object.hasOwn(CLIENT_COMMANDS, name) ? CLIENT_COMMANDS[name] : undefined
  if (clientCommand) {
    refuseLeftOverArguments(name, rest)
    refuseOptionsOfOthers(name, rest, values)
    const client = await clientOf(values)
    try {
      const result = await clientCommand(client, values)
      console.log(values.json ? JSON.stringify(result.json, null, 2) : result.text)
      return result.exitCode ?? 0
    } finally {
      await client.close()
    }
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined
  if (!command) throw new UsageError(`unknown command ${name}`)
  refuseLeftOverArguments(name, rest)
  refuseOptionsOfOthers(name, rest, values)
  const config = loadConfig()
  const input = Object.hasOwn(INPUTS, name) ? await INPUTS[name](rest, values, config) : undefined
  const missing = Object.hasOwn(INPUTS, name) ? null : missingStore(config)
  // Without a store, the command runs on an empty one in memory, so that its usage mistakes are still told first;
  // told so by its config, it leaves alone what lies outside the store (the file a backup would write).
  const opened = missing ? { ...config, dataDir: IN_MEMORY } : config
  const store = await openStore(opened)
  // On stderr, so that stdout stays the command's answer (--json).
  if (!missing) console.error(`Store: ${storeDescription(config)}`)
  // What the command writes (a drain's imports, a reset's rows) would be stamped behind the clock the servers tell,
  // where an incremental sync that takes its mark from them does not look.
  if (!missing && !WRITING_NOTHING.has(name) && (await movedClockOffset(config, store)) > 0)
    console.error(`Warning: ${MOVED_CLOCK_WARNING}; what a command writes is stamped by the system clock: give it CLOCK=controlled`)
  try {
    const result = await command(store, rest, values, {
      config: opened,
      clock: await clockFor(config.clock, store.clockOffset),
      input,
    }).catch((error: unknown) => {
      throw missing && !isUsageMistake(error) ? missing : error
    })
    if (missing) throw missing
    console.log(values.json ? JSON.stringify(result.json, null, 2) : result.text)
    return 0
  } finally {
    await store.close()
  }
}

/**
 * Where DATA_DIR holds no embedded store, what a command on its companies answers: a mistaken directory, most
 * likely, where it must not make an empty store and report that it holds nothing.
 */
function missingStore(config: Config): NotFoundError | ValidationError | null {
  if (config.mongodbUrl) return null
  // The test mode's DATA_DIR, copied to a command meant for its server, would move or list the command's own store.
  if (config.dataDir === IN_MEMORY)
    return new ValidationError({
      resource: 'DATA_DIR',
      description: `a store in memory lives in its process only: ${IN_MEMORY} holds nothing for a command (a --test-mode server's store is reached through its admin routes)`,
    })
  const file = sqliteFile(config)
  try {
    statSync(file)
    return null
  } catch (error) {
    // Only a plain absence: for another cause (a file where a directory should be…), opening the store names it.
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return null
    return new NotFoundError('store', `no store at ${file}: check DATA_DIR (npm start, demo and load make one)`)
  }
}

/** A mistake in the command line: ours, or parseArgs' (a TypeError with a code). */
function isUsageMistake(error: unknown): error is Error {
  return error instanceof UsageError || (error instanceof TypeError && 'code' in error)
}

function report(error: unknown): number {
  if (isUsageMistake(error)) {
    console.error(`commission-api: ${error.message}\n\n${USAGE}`)
    return 2
  }
  if (error instanceof ConfigError) console.error(error.message)
  else if (error instanceof ValidationError) {
    console.error(`Invalid input (${error.issues.length} problem${error.issues.length === 1 ? '' : 's'}):`)
    for (const issue of error.issues) console.error(`  ${issue.resource}: ${issue.description}`)
  } else if (error instanceof NotFoundError) console.error(`Not found: ${error.message}`)
  else if (error instanceof StoreFullError) console.error(`commission-api: the store's disk is full; nothing was done (${error.message})`)
  else if (error instanceof StoreBusyError) {
    console.error(`commission-api: the store is busy or out of reach; what failed was not done: run the command again (${error.message})`)
  } else if (error instanceof StoreUnconfirmedError) {
    // Run again as it is, the command could do its write twice (a second key).
    console.error(
      `commission-api: the store went out of reach before it confirmed the write, which may have been done: look (companies, keys, structures, imports) before running the command again (${error.message})`,
    )
  } else if (error instanceof TimedOutError) console.error(`commission-api: ${error.message}`)
  else if (error instanceof ApiError || error instanceof ConnectionError || error instanceof SyncDirectoryError) {
    // A client command stopped: what it saved stays saved, and a sync run again resumes.
    console.error(`commission-api: ${error.message}`)
  } else console.error(`commission-api: ${unexpected(error)}`)
  return 1
}

/** One line for a failure that is not the user's input: its cause when it is known, else its message. */
function unexpected(error: unknown): string {
  const config = configurationOrNull()
  const known = config && startupFailure(error, config)
  if (known) return known
  // The stack is for whoever debugs the service, not for the one line an operator reads.
  const debugging = config?.logLevel === 'debug' || config?.logLevel === 'trace'
  if (error instanceof Error)
    return debugging && error.stack ? error.stack : `${error.name}: ${error.message} (LOG_LEVEL=debug prints the stack)`
  return String(error)
}

/**
 * The configuration, or null where the environment holds a bad value: `sync` and `conformance` read none, and a
 * variable of the service's set wrong beside them must not turn their one line into the stack of a ConfigError.
 */
function configurationOrNull(): Config | null {
  try {
    return loadConfig()
  } catch {
    return null
  }
}

surviveClosedOutput()
main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code
  },
  (error: unknown) => {
    process.exitCode = report(error)
  },
)
