import type { ImportDetail, ImportError, ImportItemIssue } from '../store/model.ts'

/** How many reported items an import keeps per call: the most recent ones. */
export const KEPT_ITEM_ISSUES = 100

/**
 * The most an import keeps of its calls' details, in bytes of JSON. MongoDB stores an import in one document of
 * at most 16 MiB, and a reported item's row is a call's item as sent: 100 items of a large call could exceed
 * that alone, and BSON takes up to about six times the JSON size of an item made of small values. Every import
 * of usual size stays far below it, and keeps everything.
 */
export const DETAILS_BYTES = 2 * 1024 * 1024

/** The characters kept of a call's description once an import's details are over DETAILS_BYTES. */
const SHORT_DESCRIPTION = 1000

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value))

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

/** Reported items as a description lists them: `line 2: …; line 5: …`. */
const lines = (listed: readonly ImportItemIssue[]) => listed.map((issue) => `line ${issue.line_number}: ${issue.details}`).join('; ')

/**
 * The call was refused: nothing of it was applied. The description lists every invalid item, then the items that
 * would have been skipped had it not been (`skipped`: a repeated email...), so that one fix of the call does not
 * meet another refusal it did not mention; its reported items are both, in line order.
 */
export function refused(noun: string, issues: readonly ImportItemIssue[], skipped: readonly ImportItemIssue[] = []): PayloadOutcome {
  const count = issues.length
  const alsoSkipped = skipped.length === 0 ? '' : `; and ${skipped.length} that would have been skipped: ${lines(skipped)}`
  return {
    applied: null,
    error: {
      title: 'ValidationError',
      description: `${count} invalid ${noun}${count === 1 ? '' : 's'}, nothing of this call was imported: ${lines(issues)}${alsoSkipped}`,
      parsing_error_details: lastKept([...issues, ...skipped].toSorted((a, b) => a.line_number - b.line_number)),
    },
  }
}

/** Every item of the call was skipped on its own: nothing of it was applied, which is a ValidationError, not a PartialFailure. */
export function allSkipped(noun: string, skipped: readonly ImportItemIssue[]): PayloadOutcome {
  return {
    applied: null,
    error: {
      title: 'ValidationError',
      description: `every ${noun} of this call reported an issue and was skipped, nothing of it was imported: ${lines(skipped)}`,
      parsing_error_details: lastKept(skipped),
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

/**
 * An import's details within DETAILS_BYTES: unchanged below it; over it, the earliest calls lose their reported
 * items first, oldest first (their description says how many are not listed), then their descriptions are
 * shortened, then their ignored keys are dropped, until the details fit. The most recent reported items stay, as the "most recent 100" of each call.
 */
export function boundedDetails(details: readonly ImportDetail[]): ImportDetail[] {
  let total = jsonBytes(details)
  if (total <= DETAILS_BYTES) return [...details]
  const bounded = details.map((detail) =>
    detail.error ? { ...detail, error: { ...detail.error, parsing_error_details: [...detail.error.parsing_error_details] } } : detail,
  )
  const errors = bounded.flatMap((detail) => (detail.error ? [detail.error] : []))
  for (const error of errors) {
    if (total <= DETAILS_BYTES) break
    const issues = error.parsing_error_details
    let dropped = 0
    while (issues.length > 0 && total > DETAILS_BYTES) {
      // An item dropped takes its JSON and the comma beside it.
      total -= jsonBytes(issues.shift()) + 1
      dropped++
    }
    if (dropped === 0) continue
    const note = ` (${dropped} reported item${dropped === 1 ? ' is' : 's are'} not listed: an import keeps ${DETAILS_BYTES / 1024 / 1024} MiB of details)`
    error.description += note
    total += jsonBytes(note) - 2
  }
  for (const error of errors) {
    if (total <= DETAILS_BYTES) break
    if (error.description.length <= SHORT_DESCRIPTION) continue
    const before = jsonBytes(error.description)
    error.description = `${error.description.slice(0, SHORT_DESCRIPTION)}…`
    total -= before - jsonBytes(error.description)
  }
  // The ignored keys of a record call are at most 100, but a key can be as long as a body allows.
  for (const [index, detail] of bounded.entries()) {
    if (total <= DETAILS_BYTES) break
    if (!detail.ignored_keys?.length) continue
    total -= jsonBytes(detail.ignored_keys) - 2
    bounded[index] = { ...detail, ignored_keys: [] }
  }
  return bounded
}

/** True for a plain JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
