import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { resolve } from 'node:path'
import { temporaryDirectory } from './temporary-directories.ts'
import { childEnvironment } from './test-store.ts'

export const CLI = resolve(import.meta.dirname, '../../src/cli.ts')

export function tempDataDir(): string {
  return temporaryDirectory('commission-api-')
}

/** Runs the CLI to completion, with `input` on its standard input. */
export function runCli(args: string[], env: Record<string, string>, input?: string) {
  const result = spawnSync(process.execPath, [CLI, ...args], {
    env: childEnvironment(process.env, env),
    encoding: 'utf8',
    timeout: 60_000,
    input,
  })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

export interface ServerProcess {
  child: ChildProcess
  /** Everything written to stdout so far. */
  output(): string
  /** Everything written to stderr so far. */
  errors(): string
  /** Resolves with the first stdout match of `pattern`, waiting for more output as needed. */
  waitFor(pattern: RegExp): Promise<RegExpMatchArray>
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/** Starts `commission-api serve` (or the given arguments) as a real child process. */
export function startServerProcess(env: Record<string, string>, args: string[] = ['serve']): ServerProcess {
  return startProcess(process.execPath, [CLI, ...args], { env: childEnvironment(process.env, { PORT: '0', LOG_LEVEL: 'warn', ...env }) })
}

/** Starts a program as a child process, with exactly the environment given. */
export function startProcess(
  executable: string,
  args: string[],
  options: { env: Record<string, string | undefined>; cwd?: string },
): ServerProcess {
  const child = spawn(executable, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk) => (stdout += chunk.toString()))
  child.stderr!.on('data', (chunk) => (stderr += chunk.toString()))
  return {
    child,
    output: () => stdout,
    errors: () => stderr,
    async waitFor(pattern) {
      for (;;) {
        const match = stdout.match(pattern)
        if (match) return match
        if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}) before printing ${pattern}:\n${stdout}\n${stderr}`)
        await Promise.race([once(child.stdout!, 'data'), once(child, 'exit')])
      }
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null) return child.exitCode
      child.kill(signal)
      const [code] = await once(child, 'exit')
      return code as number | null
    },
  }
}

/**
 * Runs the CLI to completion without blocking this process's event loop (a test server in this process must
 * keep answering it).
 */
export async function runCliAsync(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnCli(args, env)
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (chunk) => (stdout += chunk.toString()))
  child.stderr!.on('data', (chunk) => (stderr += chunk.toString()))
  // 'close' comes after the output streams have ended, so that nothing printed is missed.
  const [code] = await once(child, 'close')
  return { code: code as number | null, stdout, stderr }
}

/** Starts the CLI as a child process, its output piped. */
export function spawnCli(args: string[], env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, [CLI, ...args], { env: childEnvironment(process.env, env), stdio: ['ignore', 'pipe', 'pipe'] })
}
