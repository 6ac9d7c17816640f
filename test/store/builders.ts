import { loadConfig } from '../../src/config.ts'
import { newId } from '../../src/ids.ts'
import type {
  ApiKey,
  CommissionLine,
  Company,
  CustomMetric,
  DataImport,
  DataTable,
  DataTableRecord,
  GroupAttribution,
  ManagerAttribution,
  Quota,
  QuotaValue,
  ReportingStructure,
  Statement,
  User,
  UserAttributeDefinition,
} from '../../src/store/model.ts'

/** Valid model records for store tests: every builder takes the owning ids and any fields to change. */

let sequence = 0
/** A number unique in this test process, for emails, keys and external ids. */
function next(): number {
  sequence += 1
  return sequence
}

/** An ISO instant `minutes` after 2024-01-01T00:00:00.000Z, as the store keeps times. */
export function minute(minutes: number): string {
  return new Date(Date.UTC(2024, 0, 1, 0, minutes)).toISOString()
}

const CREATED = minute(0)

/** Sorts records by id, the order of every store list. */
export function byId<T extends { id: string }>(records: readonly T[]): T[] {
  return records.toSorted((left, right) => (left.id < right.id ? -1 : left.id > right.id ? 1 : 0))
}

export function aCompany(overrides: Partial<Company> = {}): Company {
  return {
    id: newId(),
    name: `Company ${next()}`,
    public_api_enabled: true,
    fiscal_year_start_month: 1,
    default_currency: 'EUR',
    created_at: CREATED,
    ...overrides,
  }
}

export function anApiKey(companyId: string, userId: string, overrides: Partial<ApiKey> = {}): ApiKey {
  const n = next()
  return {
    id: newId(),
    company_id: companyId,
    user_id: userId,
    hash: `${String(n).padStart(8, '0')}${'ab'.repeat(28)}`,
    prefix: `key${n}`,
    created_at: CREATED,
    ...overrides,
  }
}

export function aUser(companyId: string, overrides: Partial<User> = {}): User {
  const n = next()
  return {
    id: newId(),
    company_id: companyId,
    email: `user${n}@example.com`,
    name: `User ${n}`,
    status: 'active',
    role: 'Account Executive',
    currency: 'EUR',
    calculation_currency: null,
    country: 'FR',
    code: null,
    arrival_date: '2023-04-01',
    junior: false,
    archived_until: null,
    attributes: { team: 'North', bonus: 1200, bonus_currency: 'EUR', tags: ['a', 'b'], nested: { level: 2 } },
    created_at: CREATED,
    modified_at: CREATED,
    ...overrides,
  }
}

export function aUserAttribute(companyId: string, overrides: Partial<UserAttributeDefinition> = {}): UserAttributeDefinition {
  const n = next()
  return {
    id: newId(),
    company_id: companyId,
    api_key: `attribute_${n}`,
    name: `Attribute ${n}`,
    type: 'string',
    created_at: CREATED,
    ...overrides,
  }
}

export function aManagerAttribution(
  companyId: string,
  userId: string,
  managerId: string,
  overrides: Partial<ManagerAttribution> = {},
): ManagerAttribution {
  return {
    id: newId(),
    company_id: companyId,
    user_id: userId,
    manager_id: managerId,
    start_month: '2024-01',
    end_month: null,
    ...overrides,
  }
}

export function aGroupAttribution(companyId: string, userId: string, overrides: Partial<GroupAttribution> = {}): GroupAttribution {
  return {
    id: newId(),
    company_id: companyId,
    user_id: userId,
    group_dimension: 'region',
    group: `Group ${next()}`,
    start_month: '2024-01',
    end_month: '2024-12',
    ...overrides,
  }
}

export function aMetric(companyId: string, overrides: Partial<CustomMetric> = {}): CustomMetric {
  const n = next()
  return {
    id: newId(),
    company_id: companyId,
    api_key: `metric_${n}`,
    name: `Metric ${n}`,
    kind: 'amount',
    currencies: ['EUR', 'USD'],
    enum_values: null,
    created_at: CREATED,
    modified_at: CREATED,
    ...overrides,
  }
}

export function aDataTable(companyId: string, overrides: Partial<DataTable> = {}): DataTable {
  const n = next()
  return {
    id: newId(),
    company_id: companyId,
    environment: 'live',
    key: `deals_${n}`,
    name: `Deals ${n}`,
    id_field: 'deal_id',
    name_field: 'deal_name',
    fields: [
      { api_key: 'deal_id', name: 'Deal id', type: 'string', created_at: CREATED },
      { api_key: 'deal_name', name: 'Deal name', type: 'string', created_at: CREATED },
      { api_key: 'amount', name: 'Amount', type: 'amount', created_at: CREATED },
    ],
    created_at: CREATED,
    ...overrides,
  }
}

export function aRecord(companyId: string, tableId: string, overrides: Partial<DataTableRecord> = {}): DataTableRecord {
  const n = next()
  return {
    id: newId(),
    company_id: companyId,
    table_id: tableId,
    external_id: `deal-${n}`,
    values: { deal_id: `deal-${n}`, deal_name: `Deal ${n}`, amount: { value: 1000.5, currency: 'EUR' }, owners: ['x', 'y'] },
    overrides: {},
    created_at: CREATED,
    modified_at: CREATED,
    ...overrides,
  }
}

export function aStructure(companyId: string, overrides: Partial<ReportingStructure> = {}): ReportingStructure {
  return {
    id: newId(),
    company_id: companyId,
    environment: 'live',
    type: 'statement_reporting',
    name: `Structure ${next()}`,
    data_table_id: null,
    metric_keys: ['metric_a', 'metric_b'],
    field_keys: [],
    created_at: CREATED,
    modified_at: CREATED,
    ...overrides,
  }
}

export function aStatement(companyId: string, overrides: Partial<Statement> = {}): Statement {
  return {
    id: newId(),
    company_id: companyId,
    environment: 'live',
    user_id: newId(),
    date: '2024-01-31',
    plan: 'Sales plan',
    status: 'validated',
    currency: 'EUR',
    payment: 1234.56,
    target: 2000,
    target_achievement: 0.85,
    on_target_earning: null,
    achievement: 1700,
    metrics: { metric_a: { value: 12.5, currency: 'EUR' }, metric_b: 'text' },
    dimensions: { region: ['North', 'West'] },
    plan_id: null,
    period: null,
    modified_at: CREATED,
    ...overrides,
  }
}

export function aCommissionLine(companyId: string, tableId: string, overrides: Partial<CommissionLine> = {}): CommissionLine {
  return {
    id: newId(),
    company_id: companyId,
    environment: 'live',
    table_id: tableId,
    record_id: newId(),
    user_id: newId(),
    plan: 'Sales plan',
    date: '2024-01-15',
    commission: 99.9,
    currency: 'EUR',
    record_values: { deal_id: 'deal-1', amount: { value: 1000, currency: 'EUR' } },
    metrics: { metric_a: 3 },
    plan_id: null,
    period: null,
    modified_at: CREATED,
    ...overrides,
  }
}

export function aQuota(companyId: string, overrides: Partial<Quota> = {}): Quota {
  return {
    id: newId(),
    company_id: companyId,
    environment: 'live',
    name: `Quota ${next()}`,
    type: 'amount',
    frequency: 'monthly',
    status: 'active',
    currency: 'EUR',
    created_at: CREATED,
    modified_at: CREATED,
    ...overrides,
  }
}

export function aQuotaValue(companyId: string, quotaId: string, overrides: Partial<QuotaValue> = {}): QuotaValue {
  return {
    id: newId(),
    company_id: companyId,
    quota_id: quotaId,
    user_id: newId(),
    period: '2024-01',
    value: 5000,
    source: 'local',
    modified_at: CREATED,
    ...overrides,
  }
}

/** A new import of `companyId` created at `createdAt`, whose window closes `windowMinutes` later. */
export function anImport(companyId: string, createdAt: string, windowMinutes = 0, joinKey = 'users'): DataImport {
  return {
    id: newId(),
    company_id: companyId,
    target: 'users',
    table_id: null,
    data_table_key: 'users',
    join_key: joinKey,
    status: 'scheduled',
    window_ends_at: new Date(Date.parse(createdAt) + windowMinutes * 60_000).toISOString(),
    created_at: createdAt,
    launched_at: null,
    finished_at: null,
    error: false,
    details: [],
    lease_owner: null,
    lease_expires_at: null,
    attempts: 0,
    payload_bytes: 0,
  }
}

/** The largest request body the service accepts by default (`BODY_LIMIT_MB`): a payload of it must be stored whole. */
export const LARGEST_BODY_BYTES = loadConfig({}).bodyLimitMb * 1024 * 1024

/**
 * Items whose JSON text takes about `bytes`, made to cost the most in BSON: records holding long arrays of
 * small numbers, which BSON stores in about six times their JSON size (a type byte, the index as a key, the
 * number). Unique values in every record, so that a part read in the wrong order would show.
 */
export function heavyItems(bytes: number): unknown[] {
  const perItem = 64 * 1024
  return Array.from({ length: Math.ceil(bytes / perItem) }, (_, index) => ({
    deal_id: `H-${index}`,
    // `[n,0,0,...]`: two characters per number.
    deal_name: [index, ...Array.from({ length: perItem / 2 - 8 }, () => 0)],
  }))
}
