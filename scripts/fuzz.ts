import { spawnSync } from 'node:child_process'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'

/**
 * `npm run test:fuzz -- --runs N [--seed S]`: the fuzz test of `npm test` (test/fuzz.test.ts, 1,500 requests
 * there), run with N requests, and with a given seed to replay a failure fast-check reported.
 */
const { values } = parseArgs({ options: { runs: { type: 'string', default: '20000' }, seed: { type: 'string' } } })
if (!/^\d+$/.test(values.runs) || (values.seed !== undefined && !/^-?\d+$/.test(values.seed))) {
  console.error('usage: npm run test:fuzz -- [--runs N] [--seed S]   (whole numbers)')
  process.exit(2)
}
const root = resolve(import.meta.dirname, '..')
const env = { ...process.env, FUZZ_RUNS: values.runs, ...(values.seed === undefined ? {} : { FUZZ_SEED: values.seed }) }
const started = Date.now()
const run = spawnSync(process.execPath, [resolve(root, 'node_modules/vitest/vitest.mjs'), 'run', 'test/fuzz.test.ts', '--testTimeout=0'], {
  cwd: root,
  env,
  stdio: 'inherit',
})
console.log(`fuzz: ${values.runs} requests, ${((Date.now() - started) / 1000).toFixed(1)} s, ${run.status === 0 ? 'passed' : 'FAILED'}`)
process.exit(run.status ?? 1)
