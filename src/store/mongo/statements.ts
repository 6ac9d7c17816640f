import type { Document } from 'bson'
import type { Statement } from '../model.ts'
import { STATEMENT_ROW_FIELDS, type StatementRowFields, type StatementRowSource, type StatementRepository } from '../port.ts'
import { STATEMENTS } from './collections.ts'
import { collectionOf, inSession, type MongoContext, read } from './context.ts'
import { statementCurrencies } from './currencies.ts'
import { byId, CALCULATED_PLAN_ID, cursorId, inCompany, ofPlan, pageFilter } from './filters.ts'
import { countAll, deleteByIds, findAll, findFirst, findOne, insertAll, replaceOwnById, writeAll } from './operations.ts'

/** A statement's row fields as a find projection: `id` is `_id`, which a projection includes anyway. */
const ROW_FIELDS_PROJECTION: Document = Object.fromEntries(
  STATEMENT_ROW_FIELDS.filter((field) => field !== 'id').map((field) => [field, 1]),
)

/**
 * A statement's rendering is kept beside it, as `{key, text}`: not part of the statement record. Replacing the
 * document drops it, as the port says.
 */
const WITHOUT_RENDERING: Document = { rendering: 0 }

type StoredRowSource = StatementRowFields & { rendering?: { key: string; text: string } }

function rowSourceOf({ rendering, ...statement }: StoredRowSource, renderingKey: string): StatementRowSource {
  if (rendering?.key === renderingKey) return { id: statement.id, rendering: rendering.text }
  return { ...statement, rendering: null }
}

/** Statements, each with the rendering of its v2 row when it holds one; a plan's are found through `company_plan_cell`. */
export function mongoStatements(context: MongoContext): StatementRepository {
  return {
    insertMany: (rows) => insertAll(context, STATEMENTS, rows),
    page: (companyId, environment, window) =>
      findFirst<Statement>(context, STATEMENTS, pageFilter(companyId, { environment }, window), window.limit, WITHOUT_RENDERING),
    async pageForExtraction(companyId, environment, window, renderingKey) {
      const projection = { ...ROW_FIELDS_PROJECTION, rendering: 1 }
      const found = await findFirst<StoredRowSource>(
        context,
        STATEMENTS,
        pageFilter(companyId, { environment }, window),
        window.limit,
        projection,
      )
      return found.map((statement) => rowSourceOf(statement, renderingKey))
    },
    pageToRender(companyId, environment, renderingKey, afterId, limit) {
      // `$ne` also matches a statement that holds no rendering at all.
      const filter = inCompany(companyId, { environment, 'rendering.key': { $ne: renderingKey } })
      if (afterId !== null) filter._id = { $gt: cursorId(afterId) }
      return findFirst<StatementRowFields>(context, STATEMENTS, filter, limit, ROW_FIELDS_PROJECTION)
    },
    saveRenderings: (companyId, environment, renderings) =>
      writeAll(
        context,
        STATEMENTS,
        renderings.map(({ id, key, text }) => ({
          updateOne: { filter: byId(companyId, id, { environment }), update: { $set: { rendering: { key, text } } } },
        })),
      ),
    list: (companyId, environment, window) =>
      findAll<Statement>(context, STATEMENTS, inCompany(companyId, { environment }), window, WITHOUT_RENDERING),
    count: (companyId, environment) => countAll(context, STATEMENTS, inCompany(companyId, { environment })),
    currenciesInUse: (companyId, environment) => statementCurrencies(context, STATEMENTS, inCompany(companyId, { environment })),
    save: (statements) =>
      statements.length === 0 ? Promise.resolve() : writeAll(context, STATEMENTS, replaceOwnById(STATEMENTS, statements)),
    deleteMany: (companyId, ids) => deleteByIds(context, STATEMENTS, companyId, ids),
    findOfPlan: (companyId, planId, only) =>
      findAll<Statement>(context, STATEMENTS, ofPlan(companyId, planId, only), undefined, WITHOUT_RENDERING),
    // A group rather than `distinct`, which a sharded collection refuses inside a transaction (savePlan's).
    async planIdsNamed(companyId, environment, planName) {
      const pipeline = [
        { $match: inCompany(companyId, { environment, plan: planName, plan_id: CALCULATED_PLAN_ID }) },
        { $group: { _id: '$plan_id' } },
        { $sort: { _id: 1 } },
      ]
      const groups = await read(context, (session) => collectionOf(context, STATEMENTS).aggregate(pipeline, inSession(session)).toArray())
      return groups.map((group) => String(group._id))
    },
    loadedNamed: async (companyId, environment, planName) =>
      (await findOne(context, STATEMENTS, inCompany(companyId, { environment, plan: planName, plan_id: null }))) !== null,
  }
}
