import { StoreConflictError } from '../port.ts'

/**
 * A driver's error as the port states it: a broken uniqueness rule (as `isUniqueViolation` recognizes the
 * driver's error for it) becomes StoreConflictError, with the driver's error as its cause; any other error is kept.
 */
export function asStoreError(error: unknown, isUniqueViolation: (error: unknown) => boolean): unknown {
  return isUniqueViolation(error) ? new StoreConflictError((error as Error).message, { cause: error }) : error
}
