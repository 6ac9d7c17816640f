import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // Integration tests start real servers and child processes: keep the noise of a shared 2-core machine down.
    maxWorkers: 2,
    // The example of docs/testing.md starts the stand-in from the checkout this names: here, this one.
    env: { COMMISSION_API_DIR: process.env.COMMISSION_API_DIR ?? fileURLToPath(new URL('.', import.meta.url)) },
  },
})
