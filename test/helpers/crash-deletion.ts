/**
 * A process for the crash test of a company's deletion (`test/company-deletion-crash.test.ts`): on the embedded store
 * of DATA_DIR it deletes the company COMPANY_ID and, once a slice of the records of its table TABLE_ID is gone, queues
 * behind the sweep's next write a transaction that never ends: it prints `paused mid-deletion` and waits, the sweep
 * held between two of its writes, for the test to kill it.
 */
import { join } from 'node:path'
import { setImmediate } from 'node:timers/promises'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts'

const store = openSqliteStore(join(process.env.DATA_DIR ?? '', 'commission-api.sqlite'))
const companyId = process.env.COMPANY_ID ?? ''
const tableId = process.env.TABLE_ID ?? ''
const before = await store.records.count(companyId, tableId)
void store.companies.delete(companyId)
while ((await store.records.count(companyId, tableId)) === before) await setImmediate()
// Writes run one at a time, in call order: the sweep's next write waits for this transaction, which never ends.
void store.transaction(async () => {
  process.stdout.write('paused mid-deletion\n')
  setInterval(() => {}, 1 << 30)
  await new Promise<never>(() => {})
})
