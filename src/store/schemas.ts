import { type Static, Type } from 'typebox'

/**
 * The TypeBox schemas of the stored shapes that the interface serves as they are (an import's errors): the
 * routes import them, the store and the services their types (`import type`, through model.ts), so that the
 * import worker's thread, which serves no HTTP, loads no TypeBox.
 */

/** An item an import skipped or refused: its 1-based position in the call's list, the item as sent, why. */
export const ImportItemIssueSchema = Type.Object({ line_number: Type.Integer(), row: Type.Unknown(), details: Type.String() })
export type ImportItemIssue = Static<typeof ImportItemIssueSchema>

/**
 * How a call of an import ended badly, as stored and as `GET /v1/imports/{import_id}` shows it. `ValidationError`:
 * the call was refused, nothing of it applied. `PartialFailure`: the others were applied.
 */
export const ImportErrorSchema = Type.Object({
  title: Type.Union([Type.Literal('ValidationError'), Type.Literal('PartialFailure')]),
  description: Type.String(),
  parsing_error_details: Type.Array(ImportItemIssueSchema, { description: 'The items reported, the most recent 100' }),
})
export type ImportError = Static<typeof ImportErrorSchema>
