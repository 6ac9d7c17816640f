import { resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig, TEST_MODE_DEFAULTS, withTestModeDefaults } from '../src/config.ts'

/** The message of the ConfigError a configuration is refused with. */
function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env)
  } catch (error) {
    return (error as Error).message
  }
  throw new Error('accepted')
}

describe('configuration', () => {
  it('has defaults for a newcomer', () => {
    expect(loadConfig({})).toEqual({
      port: 3000,
      host: '127.0.0.1',
      dataDir: resolve('./data'),
      mongodbUrl: null,
      publicUrl: null,
      adminToken: null,
      logLevel: 'info',
      demo: true,
      trustProxy: false,
      rateLimitPerSecond: 80,
      shutdownTimeoutMs: 10_000,
      shutdownDrainMs: 0,
      requestTimeoutMs: 120_000,
      importPollMs: 250,
      importLeaseMs: 60_000,
      importRetentionDays: 0,
      bodyLimitMb: 32,
      corsOrigins: [],
      workerHealthPort: null,
      importWorker: 'thread',
      importQueueLimitBytes: 64 * 1024 * 1024,
      clock: 'system',
      requestJournalSize: 1000,
      demoApiKey: null,
    })
  })

  it('reads every variable', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      DATA_DIR: '/tmp/somewhere',
      MONGODB_URL: 'mongodb://db:27017/commission?replicaSet=rs0',
      PUBLIC_URL: 'https://api.example.com/',
      ADMIN_TOKEN: 'a-very-long-admin-token',
      LOG_LEVEL: 'debug',
      DEMO: 'off',
      TRUST_PROXY: '10.0.0.0/8, 127.0.0.1, fd00::/8',
      RATE_LIMIT_PER_SECOND: '120',
      SHUTDOWN_TIMEOUT_MS: '3000',
      SHUTDOWN_DRAIN_MS: '2000',
      REQUEST_TIMEOUT_MS: '60000',
      IMPORT_POLL_MS: '100',
      IMPORT_LEASE_MS: '30000',
      IMPORT_RETENTION_DAYS: '30',
      BODY_LIMIT_MB: '64',
      CORS_ORIGINS: 'http://localhost:5173',
      WORKER_HEALTH_PORT: '9100',
      IMPORT_WORKER: 'inline',
      IMPORT_QUEUE_LIMIT_MB: '256',
      CLOCK: 'controlled',
      REQUEST_JOURNAL_SIZE: '50',
      DEMO_API_KEY: 'cak_my-reproducible-demo-key',
    })
    expect(config).toEqual({
      port: 8080,
      host: '0.0.0.0',
      dataDir: '/tmp/somewhere',
      mongodbUrl: 'mongodb://db:27017/commission?replicaSet=rs0',
      publicUrl: 'https://api.example.com',
      adminToken: 'a-very-long-admin-token',
      logLevel: 'debug',
      demo: false,
      trustProxy: ['10.0.0.0/8', '127.0.0.1', 'fd00::/8'],
      rateLimitPerSecond: 120,
      shutdownTimeoutMs: 3000,
      shutdownDrainMs: 2000,
      requestTimeoutMs: 60_000,
      importPollMs: 100,
      importLeaseMs: 30_000,
      importRetentionDays: 30,
      bodyLimitMb: 64,
      corsOrigins: ['http://localhost:5173'],
      workerHealthPort: 9100,
      importWorker: 'inline',
      importQueueLimitBytes: 256 * 1024 * 1024,
      clock: 'controlled',
      requestJournalSize: 50,
      demoApiKey: 'cak_my-reproducible-demo-key',
    })
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2)
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true)
  })

  it('reads a hop count of 0 or 1 with leading zeros as the switch those digits are, never as one hop', () => {
    expect(loadConfig({ TRUST_PROXY: '01' }).trustProxy).toBe(true)
    expect(loadConfig({ TRUST_PROXY: '00' }).trustProxy).toBe(false)
    expect(loadConfig({ TRUST_PROXY: '002' }).trustProxy).toBe(2)
  })

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['MONGODB_URL', 'postgres://x'],
    ['PUBLIC_URL', 'not a url'],
    ['PUBLIC_URL', 'ftp://files.example.com'],
    ['ADMIN_TOKEN', 'short'],
    ['LOG_LEVEL', 'loud'],
    ['DEMO', 'maybe'],
    ['TRUST_PROXY', 'everyone'],
    ['TRUST_PROXY', '1.2.3.4/99'],
    ['TRUST_PROXY', ':::'],
    ['TRUST_PROXY', '....'],
    ['TRUST_PROXY', '10.0.0.0/8/8'],
    ['TRUST_PROXY', '0.0.0.0/0'],
    ['TRUST_PROXY', '::/0'],
    ['RATE_LIMIT_PER_SECOND', '0'],
    ['RATE_LIMIT_PER_SECOND', '1.5'],
    ['SHUTDOWN_TIMEOUT_MS', 'soon'],
    ['REQUEST_TIMEOUT_MS', '999'],
    ['SHUTDOWN_DRAIN_MS', '-1'],
    ['SHUTDOWN_DRAIN_MS', 'a while'],
    ['SHUTDOWN_DRAIN_MS', '10000'],
    ['BODY_LIMIT_MB', '0'],
    ['BODY_LIMIT_MB', '513'],
    ['BODY_LIMIT_MB', '1.5'],
    ['WORKER_HEALTH_PORT', 'health'],
    ['IMPORT_WORKER', 'process'],
    ['IMPORT_QUEUE_LIMIT_MB', '0'],
    ['IMPORT_QUEUE_LIMIT_MB', '0.5'],
    ['CLOCK', 'frozen'],
    ['IMPORT_RETENTION_DAYS', '-1'],
    ['IMPORT_RETENTION_DAYS', '36501'],
    ['IMPORT_RETENTION_DAYS', 'a week'],
    ['REQUEST_JOURNAL_SIZE', '-1'],
    ['REQUEST_JOURNAL_SIZE', '100001'],
    ['DEMO_API_KEY', 'short'],
  ])('stops on a bad %s and names it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError)
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`${name}=`))
  })

  it('refuses a PUBLIC_URL with credentials, which every link would carry, without showing them', () => {
    expect(() => loadConfig({ PUBLIC_URL: 'https://user:s3cret@api.example.com' })).toThrow(
      'PUBLIC_URL="https://…@api.example.com": expected a URL without a user name or password',
    )
    expect(() => loadConfig({ PUBLIC_URL: 'https://user@api.example.com' })).toThrow(/PUBLIC_URL=.*without a user name/)
    // A password holding an @ or a / it did not encode is not shown either.
    for (const url of ['https://user:p@ss@api.example.com', 'https://user:pa/ss@api.example.com']) {
      expect(() => loadConfig({ PUBLIC_URL: url })).toThrow('PUBLIC_URL="https://…@api.example.com"')
    }
  })

  it('refuses a drain that the shutdown timeout would cut short: the timeout bounds the whole shutdown', () => {
    expect(() => loadConfig({ SHUTDOWN_DRAIN_MS: '5000', SHUTDOWN_TIMEOUT_MS: '5000' })).toThrow(
      /SHUTDOWN_DRAIN_MS=5000: must be less than SHUTDOWN_TIMEOUT_MS \(5000\)/,
    )
    expect(loadConfig({ SHUTDOWN_DRAIN_MS: '4999', SHUTDOWN_TIMEOUT_MS: '5000' }).shutdownDrainMs).toBe(4999)
  })

  it('keeps an in-memory store (DATA_DIR=:memory:) in memory, its import worker inline: a thread cannot open it', () => {
    expect(loadConfig({ DATA_DIR: ':memory:' })).toMatchObject({ dataDir: ':memory:', importWorker: 'inline' })
    expect(() => loadConfig({ DATA_DIR: ':memory:', IMPORT_WORKER: 'thread' })).toThrow(
      /IMPORT_WORKER="thread": a worker thread cannot open an in-memory store/,
    )
    // With MongoDB the data is not in DATA_DIR: the thread opens MongoDB.
    expect(loadConfig({ DATA_DIR: ':memory:', MONGODB_URL: 'mongodb://db/x', IMPORT_WORKER: 'thread' }).importWorker).toBe('thread')
    expect(loadConfig({ DATA_DIR: './memory' }).dataDir).toBe(resolve('./memory'))
  })

  it('reads the words a variable takes, and a URL scheme, in any letter case, and a list without its empty items', () => {
    expect(
      loadConfig({
        DATA_DIR: ':MEMORY:',
        LOG_LEVEL: 'DEBUG',
        CLOCK: 'Controlled',
        IMPORT_WORKER: 'INLINE',
        DEMO: 'OFF',
        TRUST_PROXY: ' 10.0.0.1,, 10.0.0.2 ,',
        CORS_ORIGINS: ',http://localhost:5173,,',
        MONGODB_URL: 'MongoDB+SRV://db.example.com/Commission',
        PUBLIC_URL: 'HTTPS://api.example.com',
      }),
    ).toMatchObject({
      dataDir: ':memory:',
      logLevel: 'debug',
      clock: 'controlled',
      importWorker: 'inline',
      demo: false,
      trustProxy: ['10.0.0.1', '10.0.0.2'],
      corsOrigins: ['http://localhost:5173'],
      // The rest as it is: a database's name is the database's.
      mongodbUrl: 'mongodb+srv://db.example.com/Commission',
      publicUrl: 'https://api.example.com',
    })
    expect(loadConfig({ DATA_DIR: ':Memory:', IMPORT_WORKER: 'Inline' }).importWorker).toBe('inline')
    expect(() => loadConfig({ DATA_DIR: ':Memory:', IMPORT_WORKER: 'Thread' })).toThrow(
      /IMPORT_WORKER="Thread": a worker thread cannot open an in-memory store/,
    )
    // Commas alone list nothing: the default, as a value of spaces only.
    expect(loadConfig({ TRUST_PROXY: ' , ', CORS_ORIGINS: ',,' })).toMatchObject({ trustProxy: false, corsOrigins: [] })
    // A path, a secret or a key is taken as written.
    expect(loadConfig({ DATA_DIR: './Data' }).dataDir).toBe(resolve('./Data'))
    expect(refusal({ DEMO_API_KEY: 'CAK_A-demo_key-0123456789' })).toMatch(/DEMO_API_KEY=.*expected an API key/)
  })

  it('gives --test-mode its defaults under what the environment sets', () => {
    expect(loadConfig(withTestModeDefaults({}))).toMatchObject({
      clock: 'controlled',
      dataDir: ':memory:',
      importWorker: 'inline',
      adminToken: TEST_MODE_DEFAULTS.ADMIN_TOKEN,
      demo: true,
      demoApiKey: TEST_MODE_DEFAULTS.DEMO_API_KEY,
    })
    const mine = loadConfig(withTestModeDefaults({ PORT: '4000', ADMIN_TOKEN: 'my-own-admin-token-42', DATA_DIR: '', CLOCK: undefined }))
    expect(mine).toMatchObject({ port: 4000, adminToken: 'my-own-admin-token-42', dataDir: ':memory:', clock: 'controlled' })
  })

  it('takes any value its variable accepts, one that starts with ! included', () => {
    expect(loadConfig({ ADMIN_TOKEN: '!an-admin-token-that-is-long' }).adminToken).toBe('!an-admin-token-that-is-long')
    expect(loadConfig({ DATA_DIR: '!data' }).dataDir).toBe(resolve('!data'))
    expect(loadConfig({ HOST: '!host' }).host).toBe('!host')
  })

  it('refuses an admin token no client could present in a header: other than printable ASCII', () => {
    for (const secret of ['an-admin-tokén-that-is-long', 'an-admin-token\tthat-is-long', 'an-admin-token\u0000-that-is-long']) {
      expect(refusal({ ADMIN_TOKEN: secret })).toMatch(/ADMIN_TOKEN=.*expected printable ASCII characters only/)
    }
    expect(loadConfig({ ADMIN_TOKEN: 'an admin token with spaces' }).adminToken).toBe('an admin token with spaces')
    // A variable's value is read trimmed: the spaces at its ends are not the secret's.
    expect(loadConfig({ ADMIN_TOKEN: ' an-admin-token-that-is-long ' }).adminToken).toBe('an-admin-token-that-is-long')
  })

  it("takes a DEMO_API_KEY of the service's form only, which a log then knows for a key wherever a client puts it", () => {
    for (const secret of ['a-demo-key-without-its-prefix', 'cak_short', 'cak_a-demo-key-with-an-é', 'cak_a demo key with spaces']) {
      expect(refusal({ DEMO_API_KEY: secret })).toMatch(/DEMO_API_KEY=.*expected an API key: cak_ then at least 16/)
    }
    expect(loadConfig({ DEMO_API_KEY: 'cak_A-demo_key-0123456789' }).demoApiKey).toBe('cak_A-demo_key-0123456789')
  })

  it('never shows a secret it refuses, nor the credentials of a URL', () => {
    const token = refusal({ ADMIN_TOKEN: 'hunter2-short' })
    expect(token).toMatch(/ADMIN_TOKEN=.*expected at least 16 characters/)
    expect(token).not.toContain('hunter2')
    expect(refusal({ DEMO_API_KEY: 'cak_tiny' })).not.toContain('cak_tiny')
    const url = refusal({ MONGODB_URL: 'postgres://admin:s3cret@db:5432/x' })
    expect(url).toContain('MONGODB_URL="postgres://…@db:5432/x": expected a mongodb://')
    expect(url).not.toContain('s3cret')
  })

  it('names every bad variable at once', () => {
    expect(() => loadConfig({ PORT: 'x', LOG_LEVEL: 'y' })).toThrow(/PORT=[\s\S]*LOG_LEVEL=/)
  })
})
