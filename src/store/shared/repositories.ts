import type { Store } from '../port.ts'

/** The repositories of a store: every member of the port but what the adapter holds itself (its lifecycle, its counters). */
export type Repositories = Omit<
  Store,
  | 'kind'
  | 'itemsPerTransaction'
  | 'readsBlockThread'
  | 'rateLimits'
  | 'transaction'
  | 'committedWrites'
  | 'dataVersion'
  | 'ping'
  | 'backupTo'
  | 'close'
>

/**
 * How an adapter makes each repository over its context (SQLite's `Sql`, MongoDB's `MongoContext`), by the port's
 * name: a module of its own each, gathered in the adapter's `repositories.ts`.
 */
export type RepositoryModules<Context> = { readonly [Name in keyof Repositories]: (context: Context) => Repositories[Name] }

/** Every repository of a store over `context`: the connection's, or inside a transaction the transaction's. */
export function repositoriesOver<Context>(modules: RepositoryModules<Context>, context: Context): Repositories {
  return Object.fromEntries(Object.entries(modules).map(([name, make]) => [name, make(context)])) as unknown as Repositories
}
