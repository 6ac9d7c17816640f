/** The segments of JSON pointers (RFC 6901), where problems are reported: a `/` in a key is not a level, nor a `~` an escape. */

/** A map's key as a segment of a JSON pointer. */
export const pointerSegment = (key: string): string => key.replaceAll('~', '~0').replaceAll('/', '~1')

/** The key a segment of a JSON pointer names. */
export const keyOfPointerSegment = (segment: string): string => segment.replaceAll('~1', '/').replaceAll('~0', '~')
