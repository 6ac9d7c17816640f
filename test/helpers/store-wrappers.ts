import type { Store } from '../../src/store/port.ts'

/**
 * `store`, whose transactions call `pause` when they mark an import finished (`imports.finish`), before the mark:
 * once every payload of a run is applied, with the run's transaction still open. How a test holds a run at that
 * moment, or makes it fail there, without a hook in the worker. A finish outside a transaction (an import failed
 * on a fault of ours) is not paused.
 */
export function pausingBeforeFinish(store: Store, pause: (importId: string, owner: string) => Promise<void>): Store {
  return {
    ...store,
    transaction: (work, options) =>
      store.transaction(
        (tx) =>
          work({
            ...tx,
            imports: {
              ...tx.imports,
              async finish(companyId, id, owner, outcome) {
                await pause(id, owner)
                return tx.imports.finish(companyId, id, owner, outcome)
              },
            },
          }),
        options,
      ),
  }
}

/** `store`, whose reads of an import's payloads (`imports.payloads`, the first thing a run does) wait for `pause`. */
export function pausingBeforePayloads(store: Store, pause: (importId: string) => Promise<void>): Store {
  return {
    ...store,
    imports: {
      ...store.imports,
      async payloads(companyId, importId) {
        await pause(importId)
        return store.imports.payloads(companyId, importId)
      },
    },
  }
}
