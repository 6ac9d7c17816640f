import { type Binary, type Document, ObjectId } from 'bson'
import type { IndexDescription } from 'mongodb'
import type { CompanyOrigin, CompanyOriginRepository } from '../company-origins.ts'
import { lookupId, toObjectId } from './codec.ts'
import { COMPANY_ORIGIN_PARTS, COMPANY_ORIGINS } from './collections.ts'
import { inCompany } from './filters.ts'
import { fromJsonParts, jsonParts } from './json-parts.ts'
import { atomically, collectionOf, inSession, type MongoContext } from './context.ts'

export const ORIGIN_INDEXES: ReadonlyMap<string, readonly IndexDescription[]> = new Map<string, readonly IndexDescription[]>([
  [COMPANY_ORIGINS.collection, [{ key: { company_id: 1 }, name: 'company_id' }]],
  [COMPANY_ORIGIN_PARTS.collection, [{ key: { company_id: 1, index: 1 }, name: 'company_index' }]],
])

/**
 * Company origins: a fixture may be far larger than a document holds (16 MiB), so an origin is stored as its
 * JSON text in parts, as a call's payload is (`json-parts.ts`): the first in the origin's document (`_id`:
 * the company's id), the others in `company_origin_parts`. A company has one origin: saving replaces it.
 */
export function mongoCompanyOrigins(context: MongoContext): CompanyOriginRepository {
  return {
    save(origin) {
      const companyId = toObjectId(origin.company_id)
      const [first, ...others] = jsonParts(origin)
      return atomically(context, async (session) => {
        await collectionOf(context, COMPANY_ORIGIN_PARTS).deleteMany({ company_id: companyId }, inSession(session))
        await collectionOf(context, COMPANY_ORIGINS).replaceOne(
          { _id: companyId, company_id: companyId } as Document,
          { company_id: companyId, json: first, parts: others.length + 1 },
          { ...inSession(session), upsert: true },
        )
        if (others.length > 0) {
          const parts = others.map((bytes, index) => ({ _id: new ObjectId(), company_id: companyId, index: index + 1, bytes }))
          await collectionOf(context, COMPANY_ORIGIN_PARTS).insertMany(parts, { ...inSession(session), ordered: true })
        }
      })
    },
    // Its document and its parts are read in one snapshot: a save under way replaces them all at once.
    get: (companyId) =>
      atomically(context, async (session) => {
        const id = lookupId(companyId)
        const document = await collectionOf(context, COMPANY_ORIGINS).findOne({ _id: id, company_id: id } as Document, inSession(session))
        if (!document) return null
        const others =
          Number(document.parts) > 1
            ? await collectionOf(context, COMPANY_ORIGIN_PARTS)
                .find(inCompany(companyId), { ...inSession(session), sort: { index: 1 } })
                .toArray()
            : []
        if (others.length !== Number(document.parts) - 1)
          throw new Error(`company origin ${companyId}: ${others.length + 1} of its ${String(document.parts)} parts are stored`)
        return fromJsonParts([document.json as Binary, ...others.map((part) => part.bytes as Binary)]) as CompanyOrigin
      }),
  }
}
