// Loaded by `npm start` before the server's entry point (`node --import ./scripts/compile-cache.mjs ...`): turns on
// Node's module compile cache, so that a start after the first reads each module's stripped and compiled code from
// disk, in the HTTP thread and the import worker's thread alike. The TypeScript stripper is then never loaded: about
// 25 MiB less in every server (docs/performance.md, "Memory"). The cache is in NODE_COMPILE_CACHE's folder, or
// node-compile-cache in the system's temporary one; Node keys it by each file's contents, so an edited file is
// compiled again. NODE_DISABLE_COMPILE_CACHE=1 turns it off. Plain JavaScript, so that it is never stripped itself.
import module from 'node:module'

module.enableCompileCache()
