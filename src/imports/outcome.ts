import type { ImportError, ImportItemIssue } from '../store/model.ts'

/** How many reported items an import keeps per call: the most recent ones. */
export const KEPT_ITEM_ISSUES = 100

/**
 * What applying one call's payload gave, for its `data_tables_details` entry: how many of its items were applied
 * (null: the call was refused, nothing of it applied) and the error to report, if any.
 */
export interface PayloadOutcome {
  applied: number | null
  error: ImportError | null
}

function lastKept(issues: readonly ImportItemIssue[]): ImportItemIssue[] {
  return issues.slice(-KEPT_ITEM_ISSUES)
}

/** The call was refused: nothing of it was applied. The description lists every invalid item. */
export function refused(noun: string, issues: readonly ImportItemIssue[]): PayloadOutcome {
  const lines = issues.map((issue) => `line ${issue.line_number}: ${issue.details}`)
  const count = issues.length
  return {
    applied: null,
    error: {
      title: 'ValidationError',
      description: `${count} invalid ${noun}${count === 1 ? '' : 's'}, nothing of this call was imported: ${lines.join('; ')}`,
      parsing_error_details: lastKept(issues),
    },
  }
}

/** The call was refused for a reason that is not one item's (its data table is gone...). */
export function refusedWhole(description: string): PayloadOutcome {
  return { applied: null, error: { title: 'ValidationError', description, parsing_error_details: [] } }
}

/** Every item was applied. */
export function allApplied(total: number): PayloadOutcome {
  return { applied: total, error: null }
}

/** Some items were skipped (reported as a PartialFailure), the others applied. */
export function partial(noun: string, total: number, skipped: readonly ImportItemIssue[]): PayloadOutcome {
  if (skipped.length === 0) return allApplied(total)
  return {
    applied: total - skipped.length,
    error: {
      title: 'PartialFailure',
      description: `${skipped.length} of ${total} ${noun}${total === 1 ? '' : 's'} reported an issue and ${skipped.length === 1 ? 'was' : 'were'} skipped; the others were imported`,
      parsing_error_details: lastKept(skipped),
    },
  }
}

/** True for a plain JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
