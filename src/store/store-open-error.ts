/** The store could not be opened. The message, one line, names the file or server and the cause. */
export class StoreOpenError extends Error {
  override name = 'StoreOpenError'
}
