import { expect } from 'vitest'
import type { TestServer } from './helpers/server.ts'

/** Helpers shared by the v2 tests. */

export const ADMIN_TOKEN = 'admin-token-for-the-v2-tests'
export const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
/** The environment of the v2 test servers: admin routes on, and a rate limit these many calls never reach (the manual clock stands still). */
export const V2_TEST_ENV = { ADMIN_TOKEN, RATE_LIMIT_PER_SECOND: '1000000' }

/** The id of a company's structure, quota or data table by name (sandbox included). */
export async function idsByName(server: TestServer, companyId: string): Promise<(name: string) => string> {
  const named = [...(await server.store.structures.list(companyId)), ...(await server.store.quotas.list(companyId))]
  return (name) => {
    const found = named.find((item) => item.name === name)
    if (!found) throw new Error(`no structure named ${name}`)
    return found.id
  }
}

/** The 400 body of the specification for one bad parameter. */
export function badParameter(resource: string) {
  return { count: 1, errors: [{ error: 'ValidationError', resource, description: expect.any(String) }] }
}

/** The 404 body of the specification. */
export function notFound(resource: string) {
  return { message: expect.any(String), resource, type: 'NotFoundError' }
}

/** Follows `next_url` from `path` until `has_more` is false; returns every row and every page's meta. */
export async function walk(server: TestServer, key: string, path: string, onPage?: (page: number, hasMore: boolean) => Promise<void>) {
  const rows: any[] = []
  const metas: any[] = []
  let url: string | null = server.url + path
  for (let page = 0; url; page++) {
    const reply = await server.call(url.slice(server.url.length), { key })
    expect(reply.status, reply.text).toBe(200)
    rows.push(...reply.body.data)
    metas.push(reply.body.meta)
    if (reply.body.meta.has_more) expect(reply.body.meta.next_url.startsWith(server.url)).toBe(true)
    url = reply.body.meta.has_more ? reply.body.meta.next_url : null
    if (onPage) await onPage(page, reply.body.meta.has_more)
  }
  return { rows, metas }
}
