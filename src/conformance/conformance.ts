import type { CommissionClient } from '../client/index.ts'
import { CheckContext, type CheckResult } from './context.ts'
import {
  authenticationChecks,
  boundChecks,
  discoveryChecks,
  fieldChecks,
  paginationChecks,
  rowChecks,
  v1ListChecks,
} from './read-checks.ts'
import { writeChecks } from './write-checks.ts'

/**
 * `conformance`: checks a running service (this one or the real one) against the specification, through the
 * client, and reports each check with its evidence. Read-only unless `write` is set.
 */

export interface ConformanceOptions {
  /** Add the upsert, import and archive checks (a test company only). */
  write?: boolean
  /** A data table's API name, for the checks of its v1 routes. */
  table?: string
}

export interface ConformanceReport {
  results: CheckResult[]
  passed: number
  failed: number
}

const SECTIONS: Array<[string, (ctx: CheckContext) => Promise<void>]> = [
  ['auth', authenticationChecks],
  ['discovery', discoveryChecks],
  ['fields', fieldChecks],
  ['rows', rowChecks],
  ['pagination', paginationChecks],
  ['bounds', boundChecks],
  ['v1 lists', v1ListChecks],
]

export async function runConformance(client: CommissionClient, options: ConformanceOptions = {}): Promise<ConformanceReport> {
  const ctx = new CheckContext(client, { table: options.table })
  const sections = options.write ? [...SECTIONS, ['writes', writeChecks] as const] : SECTIONS
  for (const [name, run] of sections) {
    try {
      await run(ctx)
    } catch (error) {
      // A section that cannot go on (the service stopped answering...) is one failure, and the others still run.
      ctx.record(`${name}: could not complete`, 'fail', error instanceof Error ? error.message : String(error))
    }
  }
  return {
    results: ctx.results,
    passed: ctx.results.filter((result) => result.result === 'pass').length,
    failed: ctx.results.filter((result) => result.result === 'fail').length,
  }
}

/** The report as a table (check, result, evidence), ending with the line `N passed, N failed`. */
export function formatReport(report: ConformanceReport): string {
  const checkWidth = Math.min(90, Math.max(5, ...report.results.map((result) => result.check.length)))
  const line = (check: string, result: string, evidence: string) => `${check.padEnd(checkWidth)}  ${result.padEnd(6)}  ${evidence}`
  return [
    line('check', 'result', 'evidence'),
    line('-'.repeat(checkWidth), '------', '--------'),
    ...report.results.map((result) => line(result.check, result.result === 'fail' ? 'FAIL' : result.result, result.evidence)),
    '',
    `${report.passed} passed, ${report.failed} failed`,
  ].join('\n')
}
