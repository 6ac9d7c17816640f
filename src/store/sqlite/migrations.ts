/**
 * The SQLite schema, as an ordered list of migrations; `PRAGMA user_version` records how many ran.
 * Append a migration to change the schema; never edit one that has shipped.
 *
 * Each table keeps the whole record as JSON in `doc`, plus the columns its queries filter and order on, except
 * statements and commission lines, kept column by column (statement-columns.ts, line-columns.ts).
 * Row tables read by id-ordered pages are WITHOUT ROWID with (company, sequence, id) as primary key (a sequence:
 * an environment's statements, a table's lines, a quota's values), so a page is one seek and a sequential read
 * of the rows it returns.
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE companies (id TEXT PRIMARY KEY, doc TEXT NOT NULL) WITHOUT ROWID;

  CREATE TABLE api_keys (
    id TEXT PRIMARY KEY, company_id TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, doc TEXT NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX api_keys_company ON api_keys (company_id, id);

  CREATE TABLE users (
    company_id TEXT NOT NULL, id TEXT NOT NULL, email_lower TEXT NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (company_id, id)
  ) WITHOUT ROWID;
  CREATE UNIQUE INDEX users_email ON users (company_id, email_lower);

  CREATE TABLE user_attributes (
    company_id TEXT NOT NULL, id TEXT NOT NULL, api_key TEXT NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (company_id, id)
  ) WITHOUT ROWID;
  CREATE UNIQUE INDEX user_attributes_key ON user_attributes (company_id, api_key);

  CREATE TABLE manager_attributions (
    company_id TEXT NOT NULL, id TEXT NOT NULL, user_id TEXT NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (company_id, id)
  ) WITHOUT ROWID;
  CREATE INDEX manager_attributions_user ON manager_attributions (company_id, user_id);

  CREATE TABLE group_attributions (
    company_id TEXT NOT NULL, id TEXT NOT NULL, user_id TEXT NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (company_id, id)
  ) WITHOUT ROWID;
  CREATE INDEX group_attributions_user ON group_attributions (company_id, user_id);

  CREATE TABLE custom_metrics (
    company_id TEXT NOT NULL, id TEXT NOT NULL, api_key TEXT NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (company_id, id)
  ) WITHOUT ROWID;
  CREATE UNIQUE INDEX custom_metrics_key ON custom_metrics (company_id, api_key);

  CREATE TABLE data_tables (
    company_id TEXT NOT NULL, id TEXT NOT NULL, environment TEXT NOT NULL, key TEXT NOT NULL,
    doc TEXT NOT NULL, PRIMARY KEY (company_id, id)
  ) WITHOUT ROWID;
  CREATE UNIQUE INDEX data_tables_key ON data_tables (company_id, environment, key);

  CREATE TABLE data_table_records (
    company_id TEXT NOT NULL, table_id TEXT NOT NULL, id TEXT NOT NULL, external_id TEXT NOT NULL,
    doc TEXT NOT NULL, PRIMARY KEY (company_id, table_id, id)
  ) WITHOUT ROWID;
  CREATE UNIQUE INDEX data_table_records_external ON data_table_records (company_id, table_id, external_id);

  CREATE TABLE reporting_structures (
    company_id TEXT NOT NULL, id TEXT NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (company_id, id)
  ) WITHOUT ROWID;

  CREATE TABLE statements (
    company_id TEXT NOT NULL, environment TEXT NOT NULL, id TEXT NOT NULL, modified_at TEXT NOT NULL,
    doc TEXT NOT NULL, PRIMARY KEY (company_id, environment, id)
  ) WITHOUT ROWID;

  CREATE TABLE commission_lines (
    company_id TEXT NOT NULL, table_id TEXT NOT NULL, id TEXT NOT NULL, modified_at TEXT NOT NULL,
    doc TEXT NOT NULL, PRIMARY KEY (company_id, table_id, id)
  ) WITHOUT ROWID;

  CREATE TABLE quotas (
    company_id TEXT NOT NULL, id TEXT NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (company_id, id)
  ) WITHOUT ROWID;

  CREATE TABLE quota_values (
    company_id TEXT NOT NULL, quota_id TEXT NOT NULL, id TEXT NOT NULL, user_id TEXT NOT NULL,
    period TEXT NOT NULL, modified_at TEXT NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (company_id, quota_id, id)
  ) WITHOUT ROWID;
  CREATE UNIQUE INDEX quota_values_cell ON quota_values (company_id, quota_id, user_id, period);
  `,
  // Imports and the payloads that joined them (src/store/sqlite/imports.ts).
  `
  CREATE TABLE imports (
    id TEXT PRIMARY KEY, company_id TEXT NOT NULL, join_key TEXT NOT NULL, status TEXT NOT NULL,
    window_ends_at TEXT NOT NULL, lease_owner TEXT, lease_expires_at TEXT, doc TEXT NOT NULL
  ) WITHOUT ROWID;
  CREATE INDEX imports_open ON imports (company_id, join_key, status, window_ends_at);
  CREATE INDEX imports_pending ON imports (status, id);

  CREATE TABLE import_payloads (
    company_id TEXT NOT NULL, import_id TEXT NOT NULL, id TEXT NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (company_id, import_id, id)
  ) WITHOUT ROWID;
  `,
  // Statements column by column (src/store/sqlite/statement-columns.ts): the v2 extraction's hot path.
  `
  CREATE TABLE statements_by_column (
    company_id TEXT NOT NULL, environment TEXT NOT NULL, id TEXT NOT NULL, modified_at TEXT NOT NULL,
    user_id TEXT NOT NULL, date TEXT NOT NULL, plan TEXT NOT NULL, status TEXT NOT NULL, currency TEXT NOT NULL,
    payment REAL, target REAL, target_achievement REAL, on_target_earning REAL, achievement REAL,
    metrics TEXT NOT NULL, dimensions TEXT NOT NULL,
    PRIMARY KEY (company_id, environment, id)
  ) WITHOUT ROWID;
  INSERT INTO statements_by_column
    SELECT company_id, environment, id, modified_at, doc ->> '$.user_id', doc ->> '$.date', doc ->> '$.plan',
      doc ->> '$.status', doc ->> '$.currency', doc ->> '$.payment', doc ->> '$.target', doc ->> '$.target_achievement',
      doc ->> '$.on_target_earning', doc ->> '$.achievement', doc -> '$.metrics', doc -> '$.dimensions'
    FROM statements;
  DROP TABLE statements;
  ALTER TABLE statements_by_column RENAME TO statements;
  `,
  // A statement's v2 row text, rendered ahead of reads (src/v2/statement-texts.ts). A replaced row has none.
  `
  ALTER TABLE statements ADD COLUMN rendering_key TEXT;
  ALTER TABLE statements ADD COLUMN rendering TEXT;
  `,
  // Plans, and where the results of each are (src/calculation/): a statement per (plan, user, period), the
  // lines of a cell and of a record. Loaded statements and lines have no plan and stay out of these indexes.
  `
  CREATE TABLE plans (
    company_id TEXT NOT NULL, id TEXT NOT NULL, environment TEXT NOT NULL, name TEXT NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (company_id, id)
  ) WITHOUT ROWID;
  CREATE UNIQUE INDEX plans_name ON plans (company_id, environment, name);

  ALTER TABLE statements ADD COLUMN plan_id TEXT;
  ALTER TABLE statements ADD COLUMN period TEXT;
  CREATE INDEX statements_plan_cell ON statements (company_id, plan_id, user_id, period) WHERE plan_id IS NOT NULL;

  ALTER TABLE commission_lines ADD COLUMN plan_id TEXT;
  ALTER TABLE commission_lines ADD COLUMN user_id TEXT;
  ALTER TABLE commission_lines ADD COLUMN period TEXT;
  ALTER TABLE commission_lines ADD COLUMN record_id TEXT;
  CREATE INDEX commission_lines_plan_cell ON commission_lines (company_id, plan_id, user_id, period) WHERE plan_id IS NOT NULL;
  CREATE INDEX commission_lines_record ON commission_lines (company_id, record_id) WHERE plan_id IS NOT NULL;
  `,
  // The bytes an import counts against its company's queue bound (src/store/sqlite/imports.ts). Imports not
  // finished at the upgrade count their payloads as stored; finished ones count nothing any more.
  `
  ALTER TABLE imports ADD COLUMN payload_bytes INTEGER NOT NULL DEFAULT 0;
  UPDATE imports SET payload_bytes = (
    SELECT coalesce(sum(length(CAST(payload.doc AS BLOB))), 0) FROM import_payloads AS payload
    WHERE payload.company_id = imports.company_id AND payload.import_id = imports.id)
  WHERE status <> 'finished';
  UPDATE imports SET doc = json_set(doc, '$.payload_bytes', payload_bytes);
  CREATE INDEX imports_queue ON imports (company_id, status);
  `,
  // The controlled clock's offset (src/store/sqlite/clock-offset.ts), and the fixture each company was created
  // from, to reset it (src/store/sqlite/company-origins.ts).
  `
  CREATE TABLE service_clock (id TEXT PRIMARY KEY, offset_ms INTEGER NOT NULL) WITHOUT ROWID;
  CREATE TABLE company_origins (company_id TEXT PRIMARY KEY, doc TEXT NOT NULL) WITHOUT ROWID;
  `,
  // Commission lines column by column (src/store/sqlite/line-columns.ts): a document repeated the ids its columns
  // held. The indexes of migration 5 go with the old table; the one by cell is made again. The one by record is not:
  // a recalculation finds the cells a record leaves from the record as it was (src/calculation/recalculation.ts).
  `
  CREATE TABLE commission_lines_by_column (
    company_id TEXT NOT NULL, table_id TEXT NOT NULL, id TEXT NOT NULL, modified_at TEXT NOT NULL,
    environment TEXT NOT NULL, record_id TEXT NOT NULL, user_id TEXT NOT NULL, plan TEXT NOT NULL, date TEXT NOT NULL,
    commission REAL, currency TEXT NOT NULL, metrics TEXT NOT NULL, record_values TEXT NOT NULL,
    plan_id TEXT, period TEXT,
    PRIMARY KEY (company_id, table_id, id)
  ) WITHOUT ROWID;
  INSERT INTO commission_lines_by_column
    SELECT company_id, table_id, id, modified_at, doc ->> '$.environment', doc ->> '$.record_id', doc ->> '$.user_id',
      doc ->> '$.plan', doc ->> '$.date', doc ->> '$.commission', doc ->> '$.currency', coalesce(doc -> '$.metrics', '{}'),
      coalesce(doc -> '$.record_values', '{}'), plan_id, period
    FROM commission_lines;
  DROP TABLE commission_lines;
  ALTER TABLE commission_lines_by_column RENAME TO commission_lines;
  CREATE INDEX commission_lines_plan_cell ON commission_lines (company_id, plan_id, user_id, period) WHERE plan_id IS NOT NULL;
  `,
  // The sums a calculated statement was stated from (src/calculation/engine.ts, addToCell): statements calculated
  // before have none, and are calculated whole the next time their cell changes.
  `
  ALTER TABLE statements ADD COLUMN sums TEXT;
  `,
  // A payload's place in its import, in the order the calls were stored (src/store/sqlite/imports.ts): ids made by
  // two processes do not sort in that order. The payloads stored before keep their ids' order.
  `
  ALTER TABLE import_payloads ADD COLUMN position INTEGER NOT NULL DEFAULT 0;
  UPDATE import_payloads SET position = (
    SELECT count(*) FROM import_payloads AS earlier
    WHERE earlier.company_id = import_payloads.company_id AND earlier.import_id = import_payloads.import_id
      AND earlier.id < import_payloads.id
  );
  `,
  // The payloads of finished imports, which were kept until the finish deleted them (src/store/sqlite/imports.ts).
  `
  DELETE FROM import_payloads
  WHERE EXISTS (
    SELECT 1 FROM imports
    WHERE imports.company_id = import_payloads.company_id AND imports.id = import_payloads.import_id AND imports.status = 'finished'
  );
  `,
  // Record imports left waiting by a version before record calls of all tables joined one import (2026-11-23) were
  // joined by `records:<table id>`, which no call joins any more: a call started an import of its own, which ran
  // first while the older one waited out its window, and the older one then wrote over it. Their windows close:
  // they run at once, before any import made after them. (Joined by `records`, a call to one table would join the
  // waiting import of another, and the older one of its own table would still run after it.)
  `
  UPDATE imports SET window_ends_at = doc ->> '$.created_at', doc = json_set(doc, '$.window_ends_at', doc ->> '$.created_at')
  WHERE join_key LIKE 'records:%' AND status = 'scheduled' AND window_ends_at > doc ->> '$.created_at';
  `,
  // A plan moved to another data table by a version before 2026-11-26 kept its lines of the table it left, which a
  // recalculation of their cells then counted as records (src/admin/plans.ts deletes them since). They go, but those
  // of validated and paid cells; the pending statements of their cells lose their sums, and their companies are
  // due a full recalculation, which the next start of the service runs (`recalculateDueCompanies`): their
  // statements may have counted those lines already.
  `
  CREATE TABLE IF NOT EXISTS recalculations_due (company_id TEXT NOT NULL PRIMARY KEY, reason TEXT NOT NULL) WITHOUT ROWID;
  INSERT OR IGNORE INTO recalculations_due (company_id, reason)
    SELECT DISTINCT line.company_id, 'a plan kept lines of the data table it left'
    FROM commission_lines AS line JOIN plans ON plans.company_id = line.company_id AND plans.id = line.plan_id
    WHERE line.plan_id IS NOT NULL AND line.table_id <> plans.doc ->> '$.table_id';
  UPDATE statements SET sums = NULL
  WHERE plan_id IS NOT NULL AND status = 'pending' AND EXISTS (
    SELECT 1 FROM commission_lines AS line JOIN plans ON plans.company_id = line.company_id AND plans.id = line.plan_id
    WHERE line.company_id = statements.company_id AND line.plan_id = statements.plan_id
      AND line.user_id = statements.user_id AND line.period = statements.period
      AND line.table_id <> plans.doc ->> '$.table_id'
  );
  DELETE FROM commission_lines
  WHERE plan_id IS NOT NULL
    AND EXISTS (
      SELECT 1 FROM plans
      WHERE plans.company_id = commission_lines.company_id AND plans.id = commission_lines.plan_id
        AND plans.doc ->> '$.table_id' <> commission_lines.table_id
    )
    AND NOT EXISTS (
      SELECT 1 FROM statements INDEXED BY statements_plan_cell
      WHERE statements.company_id = commission_lines.company_id AND statements.plan_id = commission_lines.plan_id
        AND statements.user_id = commission_lines.user_id AND statements.period = commission_lines.period
        AND statements.status <> 'pending'
    );
  `,
  // Finished imports by their finish time, for the deletions of IMPORT_RETENTION_DAYS (src/store/sqlite/imports.ts,
  // purgeFinished): without it each deletion read every finished import's document with the write lock held.
  `
  CREATE INDEX IF NOT EXISTS imports_finished_at ON imports (doc ->> '$.finished_at') WHERE status = 'finished';
  `,
  // The calls stored under a request key, for an hour (src/store/sqlite/imports.ts, enqueue): a PUT sent again
  // by a proxy is the same call.
  `
  CREATE TABLE IF NOT EXISTS import_requests (
    company_id TEXT NOT NULL, request_key TEXT NOT NULL, import_id TEXT NOT NULL, received_at TEXT NOT NULL,
    PRIMARY KEY (company_id, request_key)
  ) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS import_requests_received ON import_requests (company_id, received_at);
  `,
  // The latest call under each request id, for an hour (src/store/sqlite/imports.ts, enqueue), in place of the calls
  // by their own key: a call sent again is the same call only while no other call came under its id, whatever
  // other clients send meanwhile. The keys kept so far last an hour: they go.
  `
  DROP TABLE IF EXISTS import_requests;
  CREATE TABLE IF NOT EXISTS import_request_ids (
    company_id TEXT NOT NULL, id_key TEXT NOT NULL, call_key TEXT NOT NULL, import_id TEXT NOT NULL, received_at TEXT NOT NULL,
    PRIMARY KEY (company_id, id_key)
  ) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS import_request_ids_received ON import_request_ids (company_id, received_at);
  `,
  // Migration 13 as shipped from c238b78 to 7ff1009 (2026-11-26) made no table of recalculations due, and a store it
  // migrated skipped the one made since: every start failed to list them, and deleting or resetting a company
  // failed on the missing table. It had dropped the lines plans kept of the tables they left and the sums of their
  // pending cells, but listed no company: where the table is missing, the companies with pending statements left
  // without sums (those cells, and any not calculated since migration 9) are due a full recalculation.
  `
  CREATE TABLE recalculations_left_unlisted AS
    SELECT DISTINCT company_id FROM statements
    WHERE NOT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'recalculations_due')
      AND plan_id IS NOT NULL AND status = 'pending' AND sums IS NULL;
  CREATE TABLE IF NOT EXISTS recalculations_due (company_id TEXT NOT NULL PRIMARY KEY, reason TEXT NOT NULL) WITHOUT ROWID;
  INSERT OR IGNORE INTO recalculations_due (company_id, reason)
    SELECT company_id, 'a plan kept lines of the data table it left' FROM recalculations_left_unlisted;
  DROP TABLE recalculations_left_unlisted;
  `,
  // Migration 12 as shipped in eb2e744 (2026-11-26) joined the record imports of a version before 2026-11-23 by
  // `records` rather than closing their windows, and a store it migrated skipped the one shipped since: a call to one
  // table could still join the waiting import of another and run before its own table's older one. Those imports
  // (the only ones joined by `records` that keep their table on the import) run at once, as migration 12 has them.
  `
  UPDATE imports SET window_ends_at = doc ->> '$.created_at', doc = json_set(doc, '$.window_ends_at', doc ->> '$.created_at')
  WHERE join_key = 'records' AND status = 'scheduled' AND doc ->> '$.table_id' IS NOT NULL
    AND window_ends_at > doc ->> '$.created_at';
  `,
  // The deletions of companies not finished yet (src/store/sqlite/companies.ts): the company and its keys went in one
  // write, and its rows go in slices after it; a row here, written with the first, stays until the last is gone.
  `
  CREATE TABLE IF NOT EXISTS company_deletions (company_id TEXT PRIMARY KEY) WITHOUT ROWID;
  `,
  // A plan moved to the other environment by a version before 2026-11-28 saved its pending statements there beside
  // the rows of the same ids in the environment it left (the environment is part of the key), where they stayed,
  // served as they were; a recalculation of such a cell then deleted both rows. The copy its plan left goes.
  `
  DELETE FROM statements
  WHERE plan_id IS NOT NULL AND status = 'pending'
    AND EXISTS (
      SELECT 1 FROM plans
      WHERE plans.company_id = statements.company_id AND plans.id = statements.plan_id AND plans.environment <> statements.environment
    )
    AND EXISTS (
      SELECT 1 FROM statements AS moved
      WHERE moved.company_id = statements.company_id AND moved.environment IN ('live', 'sandbox')
        AND moved.id = statements.id AND moved.environment <> statements.environment
    );
  `,
  // Such a version could also leave, of one statement id, a validated or paid row in one environment and a pending
  // one in the other (an admin edit by id reached the row read first, the live one): migration 20 dropped the pending
  // copy only where its plan left it. Saving the pending copy deletes the row of its id in the other environment
  // (src/store/sqlite/statements.ts), as deleting it by id does: a line edit of the cell (which saves its statements
  // without their sums) or the plan's deletion takes the frozen copy with it. The pending copy goes; the frozen one
  // keeps its cell frozen, which no calculation states again. Two frozen copies stay: which one the cell states is not
  // the upgrade's to decide, and no calculation saves either (a line edit of the cell keeps the one it saves last).
  `
  DELETE FROM statements
  WHERE status = 'pending'
    AND EXISTS (
      SELECT 1 FROM statements AS frozen
      WHERE frozen.company_id = statements.company_id AND frozen.environment IN ('live', 'sandbox')
        AND frozen.id = statements.id AND frozen.environment <> statements.environment AND frozen.status <> 'pending'
    );
  `,
]

/** Every table that holds company data, for deleting a company. */
export const COMPANY_TABLES: readonly string[] = [
  'api_keys',
  'users',
  'user_attributes',
  'manager_attributions',
  'group_attributions',
  'custom_metrics',
  'data_tables',
  'data_table_records',
  'reporting_structures',
  'statements',
  'commission_lines',
  'quotas',
  'quota_values',
  'imports',
  'import_payloads',
  'import_request_ids',
  'plans',
  'company_origins',
  'recalculations_due',
]
