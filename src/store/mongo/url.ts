/** What a MongoDB connection string says, read without loading the driver (an embedded-store process never needs it). */

/** The database used when MONGODB_URL names none. */
export const DEFAULT_DATABASE = 'commission-api'

/**
 * The database a connection string names (`mongodb://host:27017/<name>?...`), or null when it names none.
 * Read from the text because a multi-host or `mongodb+srv` string is not a WHATWG URL.
 */
export function databaseInUrl(url: string): string | null {
  const match = /^mongodb(?:\+srv)?:\/\/[^/?]*\/([^?]+)/.exec(url)
  return match ? decodeURIComponent(match[1]) : null
}
