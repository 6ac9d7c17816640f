import { expect, it } from 'vitest'
import { runCrashLoop } from '../scripts/chaos-crash-loop.ts'

// The crash loop of `npm run test:chaos`, kept working by two short cycles: the real server, killed with
// SIGKILL while it applies imports, restarted, and every acknowledged call found applied exactly once.
it(
  'survives SIGKILLs during imports: every acknowledged call applied exactly once, nothing half applied',
  { timeout: 180_000 },
  async () => {
    const lines: string[] = []
    const report = await runCrashLoop({ cycles: 2, durationMs: 2000, log: (line) => lines.push(line) })
    expect(report.problems).toStrictEqual([])
    expect(lines).toHaveLength(2)
    expect(report.acknowledged).toBeGreaterThan(0)
    expect(report.imports).toBeGreaterThan(0)
  },
)
