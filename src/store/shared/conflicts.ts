import { StoreBusyError, StoreConflictError } from '../port.ts'

/**
 * A driver's error as the port states it: a broken uniqueness rule (as `isUniqueViolation` recognizes the
 * driver's error for it) becomes StoreConflictError, a store that could not run the work for now (`isBusy`)
 * StoreBusyError, each with the driver's error as its cause; any other error is kept.
 */
export function asStoreError(
  error: unknown,
  isUniqueViolation: (error: unknown) => boolean,
  isBusy: (error: unknown) => boolean = () => false,
): unknown {
  if (error instanceof StoreConflictError || error instanceof StoreBusyError) return error
  if (isUniqueViolation(error)) return new StoreConflictError((error as Error).message, { cause: error })
  if (isBusy(error)) return new StoreBusyError((error as Error).message, { cause: error })
  return error
}
