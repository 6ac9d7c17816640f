import { ObjectId } from 'bson'

/** A new ObjectId as a 24-character hex string: ids sort by creation time, in text and in MongoDB. */
export function newId(): string {
  return new ObjectId().toHexString()
}

const OBJECT_ID = /^[0-9a-f]{24}$/

/** True for the canonical (lower-case hex) text form of an ObjectId. */
export function isObjectId(value: string): boolean {
  return OBJECT_ID.test(value)
}
