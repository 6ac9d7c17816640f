import type { CommissionLine, CustomMetric, QuotaValue, QuotaValueSource, ReportingStructure, Statement, StatementStatus } from './model.ts'

/** Each change names the fields it sets; `modified_at` is always set, so that incremental syncs see the change. */
export interface StatementChanges {
  modified_at: string
  payment?: number | null
  status?: StatementStatus
}

export interface CommissionLineChanges {
  modified_at: string
  commission?: number
}

export interface QuotaValueChanges {
  modified_at: string
  value?: number
  source?: QuotaValueSource
}

export interface StructureChanges {
  modified_at: string
  name?: string
  metric_keys?: string[]
  field_keys?: string[]
}

export type MetricChanges = { modified_at: string } & Partial<Pick<CustomMetric, 'name' | 'kind' | 'currencies' | 'enum_values'>>

/**
 * Changes to records already stored, made by the administration surface (admin routes, CLI) and tests: the
 * edits a real company makes in the product. Each method changes one record of the company atomically, sets
 * exactly the given fields (the rest stay as they were), and returns the record as changed, or null when the
 * company has no such record. Applying the same changes twice gives the same record (idempotent).
 */
export interface AdminEditRepository {
  updateStatement(companyId: string, id: string, changes: StatementChanges): Promise<Statement | null>
  updateCommissionLine(companyId: string, id: string, changes: CommissionLineChanges): Promise<CommissionLine | null>
  updateQuotaValue(companyId: string, id: string, changes: QuotaValueChanges): Promise<QuotaValue | null>
  updateStructure(companyId: string, id: string, changes: StructureChanges): Promise<ReportingStructure | null>
  updateMetric(companyId: string, id: string, changes: MetricChanges): Promise<CustomMetric | null>
}
