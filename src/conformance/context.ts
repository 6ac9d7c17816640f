import type { ApiResponse, CommissionClient, DataStructure, FieldSchema } from '../client/index.ts'
import type { Problems } from './shapes.ts'

/** `pass` and `fail` count; `info` reports what the specification leaves open ("not shown"); `skip` what could not be checked. */
export type Outcome = 'pass' | 'fail' | 'info' | 'skip'

export interface CheckResult {
  check: string
  result: Outcome
  evidence: string
}

export interface ContextOptions {
  /** A data table's API name, for the checks of its v1 routes. */
  table?: string
}

/** What the checks share: the client, the structures discovered, and the results so far. */
export class CheckContext {
  readonly client: CommissionClient
  readonly options: ContextOptions
  readonly results: CheckResult[] = []
  structures: DataStructure[] = []
  readonly schemas = new Map<string, FieldSchema>()

  constructor(client: CommissionClient, options: ContextOptions) {
    this.client = client
    this.options = options
  }

  /** One request, whatever its answer (429s are waited out by the client). */
  get(path: string, query: Record<string, string | number | undefined> = {}, apiKey?: string | null): Promise<ApiResponse> {
    return this.client.transport.raw({ method: 'GET', path, query, apiKey })
  }

  send(
    method: 'PUT' | 'POST' | 'DELETE',
    path: string,
    body: unknown,
    query: Record<string, string | number | undefined> = {},
  ): Promise<ApiResponse> {
    return this.client.transport.raw({ method, path, query, body })
  }

  record(check: string, result: Outcome, evidence: string): void {
    this.results.push({ check, result, evidence })
  }

  /** Passes when there is no problem (with `evidence`), fails with the problems otherwise. */
  verify(check: string, problems: Problems, evidence: string): void {
    if (problems.length === 0) this.record(check, 'pass', evidence)
    else
      this.record(
        check,
        'fail',
        [...new Set(problems)].slice(0, 3).join('; ') + (problems.length > 3 ? ` (+${problems.length - 3} more)` : ''),
      )
  }

  /** Structures of a type, from discovery. */
  ofType(type: DataStructure['type']): DataStructure[] {
    return this.structures.filter((structure) => structure.type === type)
  }
}

/** The status of an answer, with its request id, as evidence. */
export const answered = (response: ApiResponse) => `${response.status}${response.requestId ? ` (request ${response.requestId})` : ''}`

/** A fresh, random ObjectId-shaped id that no service holds. */
export const unknownId = () => Array.from({ length: 24 }, () => '0123456789abcdef'[Math.floor(Math.random() * 16)]).join('')
