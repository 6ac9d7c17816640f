/**
 * Ids are ObjectIds, stored as their canonical text: 24 lower-case hex digits, which sort by creation time. A
 * client may send one in upper case (the routes' ObjectId pattern takes both), so every id from outside is read
 * through `storedId` before it is looked up.
 */

const OBJECT_ID = /^[0-9a-f]{24}$/

/** True for the stored (lower-case hex) text form of an ObjectId. */
export function isObjectId(value: string): boolean {
  return OBJECT_ID.test(value)
}

/** The stored form of an id as a client sent it; null when it is not an ObjectId, which names nothing. */
export function storedId(id: string): string | null {
  const lower = id.toLowerCase()
  return isObjectId(lower) ? lower : null
}
