import { type Static, Type } from 'typebox'

/**
 * The TypeBox schemas of what a calculation reports, which the admin routes answer: the routes import them, the
 * engine their types (`import type`), so that the import worker's thread, which calculates but serves no HTTP,
 * loads no TypeBox.
 */

/**
 * Something that kept a record or a cell from being calculated. Reported, never turned into a zero. `record`: the
 * id-field value of the record concerned, if one is.
 */
export const CalculationProblemSchema = Type.Object({
  plan: Type.String(),
  record: Type.Optional(Type.String()),
  user_id: Type.Optional(Type.String()),
  period: Type.Optional(Type.String()),
  message: Type.String(),
})
export type CalculationProblem = Static<typeof CalculationProblemSchema>

/**
 * What a recalculation did: `cells` calculated (frozen ones are not), rows written and deleted, and what kept records
 * or cells from being calculated (the first `KEPT_PROBLEMS`).
 */
export const RecalculationSummarySchema = Type.Object({
  cells: Type.Integer(),
  statements_written: Type.Integer(),
  statements_deleted: Type.Integer(),
  lines_written: Type.Integer(),
  lines_deleted: Type.Integer(),
  problems: Type.Array(CalculationProblemSchema, { description: 'the first 100' }),
})
export type RecalculationSummary = Static<typeof RecalculationSummarySchema>
