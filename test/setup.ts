import { afterAll } from 'vitest'
import { removeTemporaryDirectories } from './helpers/temporary-directories.ts'

// Registered before any test file's own hooks, so it runs after them: their servers and stores are closed by then.
afterAll(removeTemporaryDirectories)
