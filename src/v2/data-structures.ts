import { type Static, Type } from 'typebox'
import { type DataStructureType, rowsPath, structureRowCount } from '../reporting/structures.ts'
import type { Company } from '../store/model.ts'
import type { Store } from '../store/port.ts'

/** An entry of the discovery list: a live reporting structure or quota, with the URLs of its fields and rows. */
export const DataStructureSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: Type.Union([Type.Literal('statement_reporting'), Type.Literal('record_reporting'), Type.Literal('quota')]),
  total_records: Type.Integer(),
  links: Type.Object({ fields: Type.String(), records: Type.String() }),
  status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('archived')])),
})
export type DataStructureEntry = Static<typeof DataStructureSchema>

/** The discovery answer. Here rather than beside its route, so that the client's types reach no Fastify module. */
export const DataStructureListSchema = Type.Object({ data: Type.Array(DataStructureSchema) })

/** The discovery list: every live reporting structure and quota of the company, sandbox never. */
export async function listDataStructures(store: Store, company: Company, baseUrl: string): Promise<DataStructureEntry[]> {
  const [structures, quotas] = await Promise.all([store.structures.list(company.id), store.quotas.list(company.id)])
  const links = (type: DataStructureType, id: string) => ({
    fields: `${baseUrl}/v2/data-structures/${id}/fields`,
    records: baseUrl + rowsPath(type, id),
  })
  const entries: DataStructureEntry[] = []
  for (const structure of structures) {
    if (structure.environment !== 'live') continue
    const total = await structureRowCount(store, structure)
    entries.push({
      id: structure.id,
      name: structure.name,
      type: structure.type,
      total_records: total,
      links: links(structure.type, structure.id),
    })
  }
  for (const quota of quotas) {
    if (quota.environment !== 'live') continue
    entries.push({
      id: quota.id,
      name: quota.name,
      type: 'quota',
      total_records: await store.quotaValues.count(company.id, quota.id),
      links: links('quota', quota.id),
      status: quota.status,
    })
  }
  return entries
}
