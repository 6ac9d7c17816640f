import { setImmediate } from 'node:timers/promises'
import {
  type DataImport,
  type ImportPayload,
  latestImportDeadline,
  type ResendKeys,
  resendWindow,
  scheduledDetail,
  turnsOf,
} from '../model.ts'
import { type ImportOutcome, type ImportProgress, ImportQueueFullError, type ImportRepository } from '../port.ts'
import { idAfter } from '../../ids.ts'
import type { Row, Sql, SqlWriter } from './connection.ts'

/** How long a claim waits for another connection's write lock before it gives up until the next poll. */
export const CLAIM_LOCK_WAIT_MS = 1000
/**
 * How long the hourly upkeep's deletions (`purgeFinished`, `forgetRequestIds`) wait for it: a polling worker runs
 * them before its first claim, which would otherwise wait the whole write wait behind another process's long write,
 * and tries them again a minute after they fail.
 */
const UPKEEP_LOCK_WAIT_MS = CLAIM_LOCK_WAIT_MS

/** The largest id of the company's imports still to run (scheduled or started), or null. */
function latestPending(db: SqlWriter, companyId: string): string | null {
  const [row] = db.all("SELECT max(id) AS id FROM imports WHERE company_id = ? AND status IN ('scheduled', 'started')", companyId)
  return (row?.id as string | null) ?? null
}

/**
 * The import of the call that `resend` names, when it is the latest call stored under its request id within
 * `resendWindow(now)` and its import is still there; the company's ids remembered longer than that go.
 */
function importSentAgain(db: SqlWriter, companyId: string, resend: ResendKeys, now: string): DataImport | null {
  const { since, until } = resendWindow(now)
  db.run('DELETE FROM import_request_ids WHERE company_id = ? AND received_at < ?', companyId, since)
  const [row] = db.all(
    `SELECT imports.doc FROM import_request_ids AS remembered
     JOIN imports ON imports.id = remembered.import_id AND imports.company_id = remembered.company_id
     WHERE remembered.company_id = ? AND remembered.id_key = ? AND remembered.call_key = ? AND remembered.received_at BETWEEN ? AND ?`,
    companyId,
    resend.id_key,
    resend.call_key,
    since,
    until,
  )
  return row ? parseImport(row) : null
}

/** Scheduled with its window closed, or started with its lease expired (?3 now, ?6 `latestImportDeadline(now)`). */
const RUNNABLE_SCHEDULED = `candidate.status = 'scheduled' AND (candidate.window_ends_at <= ?3 OR candidate.window_ends_at > ?6)`
const RUNNABLE_STARTED = `candidate.status = 'started' AND (candidate.lease_expires_at <= ?3 OR candidate.lease_expires_at > ?6)`
/** The companies with an import started under a live lease: none of their imports may start. */
const BUSY_COMPANIES = `SELECT company_id FROM imports WHERE status = 'started' AND lease_expires_at > ?3 AND lease_expires_at <= ?6`

/** The oldest runnable import of one status whose company is neither busy nor among those served lately (?5). */
const oldestOfCompaniesNotServed = (runnable: string) => `SELECT id FROM (
  SELECT candidate.id FROM imports AS candidate
  WHERE ${runnable} AND candidate.company_id NOT IN (${BUSY_COMPANIES})
    AND candidate.company_id NOT IN (SELECT value FROM json_each(?5))
  ORDER BY candidate.id LIMIT 1)`

/**
 * The oldest import of the company `company` (an SQL expression) that is runnable in one status: the company's part of
 * its index, walked in id order.
 */
const oldestOf = (company: string, runnable: string) => `(SELECT candidate.id FROM imports AS candidate
  WHERE candidate.company_id = ${company} AND ${runnable} ORDER BY candidate.id LIMIT 1)`

/** Of a company's oldest runnable imports of each status, the older: SQL's `min` of two values is NULL when either is. */
const OLDER = 'min(coalesce(scheduled, started), coalesce(started, scheduled))'

/**
 * The import `claimNext` takes among every company's (?5 the companies served lately, as a JSON array). As on
 * MongoDB, two looks rather than one ranking of every runnable import, which cost a claim under the write lock a time
 * that grew with the imports queued (docs/performance.md, "A claim among many companies' imports"): first the oldest
 * import of a company not served lately, each status read in id order and stopped at the first; only when there is
 * none, the oldest of each company served lately, by turn.
 */
const NEXT_RUNNABLE_IMPORT = `coalesce(
  (SELECT min(id) FROM (${oldestOfCompaniesNotServed(RUNNABLE_SCHEDULED)} UNION ALL ${oldestOfCompaniesNotServed(RUNNABLE_STARTED)})),
  (SELECT ${OLDER} FROM (
     SELECT served.key AS turn, ${oldestOf('served.value', RUNNABLE_SCHEDULED)} AS scheduled, ${oldestOf('served.value', RUNNABLE_STARTED)} AS started
     FROM json_each(?5) AS served WHERE served.value NOT IN (${BUSY_COMPANIES}))
   WHERE coalesce(scheduled, started) IS NOT NULL ORDER BY turn LIMIT 1))`

/**
 * The import `claimNext` takes of the company ?4 (a drain, which takes no turns): its oldest runnable, unless it is busy,
 * found in the company's part of the index. The look among every company's would read the imports all the others
 * have queued before the company's own.
 */
const NEXT_RUNNABLE_IMPORT_OF_COMPANY = `(SELECT ${OLDER} FROM (
  SELECT ${oldestOf('?4', RUNNABLE_SCHEDULED)} AS scheduled, ${oldestOf('?4', RUNNABLE_STARTED)} AS started)
  WHERE NOT EXISTS (SELECT 1 FROM imports WHERE company_id = ?4 AND status = 'started' AND lease_expires_at > ?3 AND lease_expires_at <= ?6))`

/**
 * The conditional UPDATE that claims the import `claimNext` takes, of one company (`oneCompany`, ?4) or of any: ?1 the
 * owner, ?2 the lease's end, ?3 now, ?5 the companies served lately (a JSON array), ?6 `latestImportDeadline(now)`.
 */
export function claimStatement(oneCompany: boolean): string {
  return `UPDATE imports SET status = 'started', lease_owner = ?1, lease_expires_at = ?2,
    doc = json_set(doc, '$.status', 'started', '$.lease_owner', ?1, '$.lease_expires_at', ?2,
                   '$.launched_at', coalesce(json_extract(doc, '$.launched_at'), ?3),
                   '$.attempts', json_extract(doc, '$.attempts') + 1)
    WHERE id = ${oneCompany ? NEXT_RUNNABLE_IMPORT_OF_COMPANY : NEXT_RUNNABLE_IMPORT}
    RETURNING doc`
}

/** The bytes queued by a company: the payloads of its imports that are not finished. */
const QUEUED_BYTES = `SELECT coalesce(sum(payload_bytes), 0) FROM imports WHERE company_id = ? AND status IN ('scheduled', 'started')`

/**
 * Imports in SQLite. The record is the JSON `doc`; the columns the claim and the join filter on mirror it,
 * and every statement that changes one changes both.
 */
export function sqliteImports(sql: Sql): ImportRepository {
  return {
    async enqueue(fresh, payload, now, maxQueuedBytes) {
      // A large payload's text costs as much as its write: it is made before the write lock is taken, and the
      // write waits for the next turn of the event loop, so that the requests that came meanwhile go first.
      // The import it joins is known only under the lock: the document leaves `import_id` to its column.
      const payloadDoc = JSON.stringify(payload)
      await setImmediate()
      return sql.write((db) => {
        const sentAgain = payload.resend === undefined ? null : importSentAgain(db, fresh.company_id, payload.resend, now)
        if (sentAgain) return sentAgain
        if (maxQueuedBytes !== undefined) refuseOverBound(db, fresh.company_id, payload.bytes, maxQueuedBytes)
        // An import made without a debounce has no window (it ends where it was created), even for a call whose
        // clock reads earlier: another instance's call that read its clock first and took the lock second.
        const open = db.all(
          `SELECT doc FROM imports WHERE company_id = ? AND join_key = ? AND status = 'scheduled' AND window_ends_at > ?
             AND window_ends_at <= ? AND window_ends_at > doc ->> '$.created_at'
           ORDER BY id LIMIT 1`,
          fresh.company_id,
          fresh.join_key,
          now,
          latestImportDeadline(now),
        )[0]
        // A new import comes after the company's imports still to run, whoever made their ids: they are claimed in id order.
        const joined: DataImport = open
          ? parseImport(open)
          : { ...fresh, id: idAfter(fresh.id, latestPending(db, fresh.company_id)), details: [] }
        joined.details.push(scheduledDetail(payload))
        joined.payload_bytes += payload.bytes
        if (open) {
          db.run('UPDATE imports SET payload_bytes = ?, doc = ? WHERE id = ?', joined.payload_bytes, JSON.stringify(joined), joined.id)
        } else {
          db.run(
            `INSERT INTO imports (id, company_id, join_key, status, window_ends_at, lease_owner, lease_expires_at, payload_bytes, doc)
             VALUES (?, ?, ?, ?, ?, NULL, NULL, ?, ?)`,
            joined.id,
            joined.company_id,
            joined.join_key,
            joined.status,
            joined.window_ends_at,
            joined.payload_bytes,
            JSON.stringify(joined),
          )
        }
        // Its place among the import's calls is its detail's: the order the calls were stored in.
        db.run(
          'INSERT INTO import_payloads (company_id, import_id, id, position, doc) VALUES (?, ?, ?, ?, ?)',
          payload.company_id,
          joined.id,
          payload.id,
          joined.details.length - 1,
          payloadDoc,
        )
        if (payload.resend !== undefined) {
          db.run(
            `INSERT OR REPLACE INTO import_request_ids (company_id, id_key, call_key, import_id, received_at) VALUES (?, ?, ?, ?, ?)`,
            payload.company_id,
            payload.resend.id_key,
            payload.resend.call_key,
            joined.id,
            now,
          )
        }
        return joined
      })
    },

    async queuedBytes(companyId) {
      const [[bytes]] = await sql.values(QUEUED_BYTES, companyId)
      return Number(bytes)
    },

    async remembersRequest(companyId, idKey, now) {
      const { since, until } = resendWindow(now)
      const row = await sql.get(
        'SELECT 1 AS found FROM import_request_ids WHERE company_id = ? AND id_key = ? AND received_at BETWEEN ? AND ?',
        companyId,
        idKey,
        since,
        until,
      )
      return row !== undefined
    },

    async get(companyId, id) {
      const row = await sql.get('SELECT doc FROM imports WHERE id = ? AND company_id = ?', id, companyId)
      return row ? parseImport(row) : null
    },

    async list(companyId, { status, target, limit }) {
      const filters: [string, string[]][] = [['company_id = ?', [companyId]]]
      const statuses = status === undefined ? null : [status].flat()
      if (statuses?.length === 0) return []
      if (statuses) filters.push([`status IN (${statuses.map(() => '?').join(', ')})`, statuses])
      if (target) filters.push(["doc ->> '$.target' = ?", [target]])
      const rows = await sql.all(
        `SELECT doc FROM imports WHERE ${filters.map(([condition]) => condition).join(' AND ')} ORDER BY id DESC LIMIT ?`,
        ...filters.flatMap(([, values]) => values),
        limit,
      )
      return rows.map(parseImport)
    },

    async closeWindows(companyId, now) {
      const result = await sql.write((db) =>
        db.run(
          `UPDATE imports SET window_ends_at = ?1, doc = json_set(doc, '$.window_ends_at', ?1)
           WHERE company_id = ?2 AND status = 'scheduled' AND window_ends_at > ?1`,
          now,
          companyId,
        ),
      )
      return Number(result.changes)
    },

    async payloads(companyId, importId) {
      const rows = await sql.all(
        'SELECT import_id, doc FROM import_payloads WHERE company_id = ? AND import_id = ? ORDER BY position, id',
        companyId,
        importId,
      )
      return rows.map((row) => ({
        ...(JSON.parse(row.doc as string) as Omit<ImportPayload, 'import_id'>),
        import_id: row.import_id as string,
      }))
    },

    async claimNext(owner, now, leaseExpiresAt, companyId, recent = []) {
      // One conditional UPDATE picks and stamps the import, so that two workers can never claim the same one.
      const rows = await sql.write(
        (db) =>
          db.all(
            claimStatement(companyId !== undefined),
            owner,
            leaseExpiresAt,
            now,
            companyId ?? null,
            // The companies served lately, the least recent first; none when one company is asked for (a drain takes no turns).
            JSON.stringify(companyId ? [] : turnsOf(recent)),
            latestImportDeadline(now),
          ),
        // A claim is tried again at the next poll: it does not hold the writes queued behind it (an upsert's payload,
        // in the worker's thread) for the whole wait while another process holds the lock.
        { lockWaitMs: CLAIM_LOCK_WAIT_MS },
      )
      return rows[0] ? parseImport(rows[0]) : null
    },

    async renewLease(companyId, id, owner, leaseExpiresAt) {
      return changed(
        await sql.write((db) =>
          db.run(
            `UPDATE imports SET lease_expires_at = ?1, doc = json_set(doc, '$.lease_expires_at', ?1)
             WHERE id = ?2 AND company_id = ?3 AND status = 'started' AND lease_owner = ?4`,
            leaseExpiresAt,
            id,
            companyId,
            owner,
          ),
        ),
      )
    },

    async hold(companyId, id, owner) {
      // The transaction that calls it holds the file's one write lock already: checking the claim is enough.
      const row = await sql.get(
        `SELECT 1 AS held FROM imports WHERE id = ? AND company_id = ? AND status = 'started' AND lease_owner = ?`,
        id,
        companyId,
        owner,
      )
      return row !== undefined
    },

    async release(companyId, id, owner, { postponed = false } = {}) {
      const counted = postponed ? ", '$.busy_postponements', coalesce(json_extract(doc, '$.busy_postponements'), 0) + 1" : ''
      return changed(
        await sql.write((db) =>
          db.run(
            `UPDATE imports SET status = 'scheduled', lease_owner = NULL, lease_expires_at = NULL,
               doc = json_set(doc, '$.status', 'scheduled', '$.lease_owner', NULL, '$.lease_expires_at', NULL${counted})
             WHERE id = ?1 AND company_id = ?2 AND status = 'started' AND lease_owner = ?3`,
            id,
            companyId,
            owner,
          ),
        ),
      )
    },

    async advance(companyId, id, owner, progress: ImportProgress) {
      return changed(
        await sql.write((db) =>
          db.run(
            `UPDATE imports SET doc = json_set(json_remove(doc, '$.busy_postponements'), '$.payloads_applied', ?1, '$.details', json(?2))
             WHERE id = ?3 AND company_id = ?4 AND status = 'started' AND lease_owner = ?5`,
            progress.payloads_applied,
            JSON.stringify(progress.details),
            id,
            companyId,
            owner,
          ),
        ),
      )
    },

    async finish(companyId, id, owner, outcome: ImportOutcome) {
      return sql.write((db) => {
        const finished = changed(
          db.run(
            `UPDATE imports SET status = 'finished', lease_owner = NULL, lease_expires_at = NULL,
               doc = json_remove(json_set(doc, '$.status', 'finished', '$.lease_owner', NULL, '$.lease_expires_at', NULL,
                                          '$.finished_at', ?1, '$.error', json(?2), '$.details', json(?3)),
                                 '$.payloads_applied')
             WHERE id = ?4 AND company_id = ?5 AND status = 'started' AND lease_owner = ?6`,
            outcome.finished_at,
            JSON.stringify(outcome.error),
            JSON.stringify(outcome.details),
            id,
            companyId,
            owner,
          ),
        )
        // A finished import is never run again: its calls' bodies go with the same commit (its details stay).
        if (finished) db.run('DELETE FROM import_payloads WHERE company_id = ? AND import_id = ?', companyId, id)
        return finished
      })
    },

    async discard(companyId, id, owner) {
      return sql.write((db) => {
        const deleted = changed(
          db.run("DELETE FROM imports WHERE id = ? AND company_id = ? AND status = 'started' AND lease_owner = ?", id, companyId, owner),
        )
        if (deleted) {
          db.run('DELETE FROM import_payloads WHERE company_id = ? AND import_id = ?', companyId, id)
          db.run('DELETE FROM import_request_ids WHERE company_id = ? AND import_id = ?', companyId, id)
        }
        return deleted
      })
    },

    purgeFinished: (finishedBefore, limit) =>
      sql.write(
        (db) =>
          Number(
            db.run(
              `DELETE FROM imports WHERE id IN (
                 SELECT id FROM imports INDEXED BY imports_finished_at WHERE status = 'finished' AND doc ->> '$.finished_at' < ? LIMIT ?
               )`,
              finishedBefore,
              limit,
            ).changes,
          ),
        { lockWaitMs: UPKEEP_LOCK_WAIT_MS },
      ),

    async forgetRequestIds(receivedBefore, limit) {
      // Looked for by a read first: most hours there is none, and the write would wait for nothing while another
      // process holds the lock (a worker starting beside a long import would start its imports that much later).
      const due = await sql.get('SELECT 1 AS due FROM import_request_ids WHERE received_at < ? LIMIT 1', receivedBefore)
      if (limit <= 0 || !due) return 0
      return sql.write(
        (db) =>
          Number(
            db.run(
              `DELETE FROM import_request_ids WHERE (company_id, id_key) IN (
                 SELECT company_id, id_key FROM import_request_ids WHERE received_at < ? LIMIT ?
               )`,
              receivedBefore,
              limit,
            ).changes,
          ),
        { lockWaitMs: UPKEEP_LOCK_WAIT_MS },
      )
    },
  }
}

/** Throws ImportQueueFullError when the company has bytes queued and `bytes` more would go over `max`. */
function refuseOverBound(db: SqlWriter, companyId: string, bytes: number, max: number): void {
  const queued = Number(db.values(QUEUED_BYTES, companyId)[0][0])
  if (queued > 0 && queued + bytes > max) throw new ImportQueueFullError(queued)
}

function parseImport(row: Row): DataImport {
  return JSON.parse(row.doc as string) as DataImport
}

function changed(result: { changes: number | bigint }): boolean {
  return Number(result.changes) > 0
}
