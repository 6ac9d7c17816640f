/** The most answers kept; the oldest goes first. */
const REMEMBERED_ANSWERS = 2000
/** An answer of more rows is not kept: what is remembered must stay small. */
const REMEMBERED_ROWS = 1000

/**
 * The answers of reads, each kept while the database is at the version it was read at (`Sql.remembering`): for
 * small answers read often and changed seldom. A kept answer is frozen, since every caller shares it.
 */
export class RememberedAnswers {
  readonly #answers = new Map<string, { version: string; answer: unknown }>()

  /** The answer kept for `key` when it was read at `version`; else what `read` answers, kept when it is small. */
  answer<T>(key: string, version: string, read: () => T): T {
    const kept = this.#answers.get(key)
    if (kept?.version === version) return kept.answer as T
    const answer = read()
    if (Array.isArray(answer) && answer.length > REMEMBERED_ROWS) return answer
    this.#answers.delete(key)
    if (this.#answers.size >= REMEMBERED_ANSWERS) this.#answers.delete(this.#answers.keys().next().value as string)
    this.#answers.set(key, { version, answer: frozen(answer) })
    return answer
  }
}

function frozen<T>(answer: T): T {
  if (Array.isArray(answer)) for (const row of answer) Object.freeze(row)
  return Object.freeze(answer)
}
