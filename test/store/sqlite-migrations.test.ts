import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, expect, it } from 'vitest'
import { MIGRATIONS } from '../../src/store/sqlite/migrations.ts'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts'
import { aCompany, aStatement, aUser } from './builders.ts'

describe('SQLite migrations', () => {
  it('move statements stored as documents into columns, unchanged', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'migrate-')), 'db.sqlite')
    const company = aCompany()
    const user = aUser(company.id)
    const withFigures = aStatement(company.id, {
      user_id: user.id,
      payment: 1200.5,
      target: null,
      metrics: { attainment: 0.85, bonus: { value: 10, currency: 'EUR' } },
      dimensions: { region: ['EMEA', 'APAC'] },
    })
    const sandbox = aStatement(company.id, { user_id: user.id, environment: 'sandbox', payment: null })

    // A database as the release before the statement columns left it.
    const columnsMigration = MIGRATIONS.findIndex((migration) => migration.includes('statements_by_column'))
    const old = new DatabaseSync(path)
    for (const migration of MIGRATIONS.slice(0, columnsMigration)) old.exec(migration)
    old.exec(`PRAGMA user_version = ${columnsMigration}`)
    const insert = old.prepare('INSERT INTO statements (company_id, environment, id, modified_at, doc) VALUES (?, ?, ?, ?, ?)')
    for (const statement of [withFigures, sandbox]) {
      insert.run(statement.company_id, statement.environment, statement.id, statement.modified_at, JSON.stringify(statement))
    }
    old.close()

    const store = openSqliteStore(path)
    try {
      expect(await store.statements.page(company.id, 'live', { limit: 10 })).toStrictEqual([withFigures])
      expect(await store.statements.page(company.id, 'sandbox', { limit: 10 })).toStrictEqual([sandbox])
    } finally {
      await store.close()
    }
  })
})
