/**
 * The fields an admin edit sets (`AdminEditRepository`): an optional field left undefined is not a change,
 * while null is one (it empties the field).
 */
export function definedChanges(changes: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined))
}
