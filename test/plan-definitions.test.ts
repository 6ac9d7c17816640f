import { describe, expect, it } from 'vitest'
import { calculatePlan, userDirectory } from '../src/calculation/engine.ts'
import { parseRecord } from '../src/domain/record-values.ts'
import { resolvePlan } from '../src/fixtures/plan-definitions.ts'
import type { FixturePlan } from '../src/fixtures/schema.ts'
import type { DataTableFieldType, DataTableRecord, PlanFilter, User } from '../src/store/model.ts'
import { aDataTable, aUser } from './store/builders.ts'

/**
 * A filter's values are taken in the text the engine compares a record's value as: read as an import reads a value of
 * the field. Compared as written, `1.50` never held for a record's 1.5, nor `2026-05-10T10:00:00Z` for its stored
 * `2026-05-10T10:00:00.000Z`, and the plan silently stated nothing.
 */

const COMPANY = 'company-1'
const CREATED = '2026-01-01T00:00:00.000Z'
const field = (api_key: string, type: DataTableFieldType) => ({ api_key, name: api_key, type, created_at: CREATED })
const table = aDataTable(COMPANY, {
  key: 'deals',
  id_field: 'id',
  name_field: 'id',
  fields: [
    field('id', 'string'),
    field('owner', 'string'),
    field('closed_at', 'datetime'),
    field('amount', 'amount'),
    field('units', 'number'),
    field('day', 'date'),
    field('won', 'boolean'),
    field('types', 'multi'),
    field('label', 'string'),
  ],
})

const definition = (filters: PlanFilter[]): FixturePlan => ({
  name: 'Filtered',
  data_table: 'deals',
  user_field: 'owner',
  date_field: 'closed_at',
  amount_field: 'amount',
  frequency: 'monthly',
  rate: 0.1,
  filters,
})

function resolved(filters: PlanFilter[]) {
  const issues: Array<{ resource: string; description: string }> = []
  const plan = resolvePlan(
    definition(filters),
    { companyId: COMPANY, tables: [table], quotas: [], metrics: [] },
    { id: 'plan-1', created_at: CREATED, modified_at: CREATED },
    '',
    (resource, description) => issues.push({ resource, description }),
  )
  return { plan, issues }
}

describe("a plan filter's values, taken as a record's values are", () => {
  it.each([
    {
      name: 'a number as JSON writes it',
      filter: { field: 'units', in: ['1.50', ' 2 ', '1e21', '-0.0'] },
      taken: ['1.5', '2', '1e+21', '0'],
    },
    {
      name: 'a date-time in its UTC form to the millisecond',
      filter: { field: 'closed_at', in: ['2026-05-10T10:00:00Z', '2026-05-10T12:00:00+02:00', '2026-05-10T10:00:00.000Z'] },
      taken: ['2026-05-10T10:00:00.000Z', '2026-05-10T10:00:00.000Z', '2026-05-10T10:00:00.000Z'],
    },
    { name: 'a date as it is', filter: { field: 'day', in: ['2026-05-10'] }, taken: ['2026-05-10'] },
    { name: 'a boolean as true or false', filter: { field: 'won', in: ['true', 'false'] }, taken: ['true', 'false'] },
    { name: 'one value of a multi-valued field, trimmed', filter: { field: 'types', in: [' new ', 'upsell'] }, taken: ['new', 'upsell'] },
    { name: 'a string as it is, spaces and case kept', filter: { field: 'label', in: [' Big ', 'big'] }, taken: [' Big ', 'big'] },
    { name: 'the id field trimmed, as an import stores it', filter: { field: 'id', in: [' D-1 ', 'D-2'] }, taken: ['D-1', 'D-2'] },
  ])('takes $name', ({ filter, taken }) => {
    const { plan, issues } = resolved([filter])
    expect(issues).toEqual([])
    expect(plan.filters).toEqual([{ field: filter.field, in: taken }])
  })

  it('takes the value a multi-valued field contains trimmed', () => {
    const { plan, issues } = resolved([{ field: 'types', contains: ' new' }])
    expect(issues).toEqual([])
    expect(plan.filters).toEqual([{ field: 'types', contains: 'new' }])
  })

  it.each([
    { filter: { field: 'units', in: ['1', 'many'] }, resource: '/filters/0/in/1', description: 'units: expected a number, got "many"' },
    { filter: { field: 'units', in: ['0x1F'] }, resource: '/filters/0/in/0', description: 'units: expected a number, got "0x1F"' },
    {
      filter: { field: 'closed_at', in: ['soon'] },
      resource: '/filters/0/in/0',
      description: 'closed_at: expected an ISO 8601 date-time, got "soon"',
    },
    {
      filter: { field: 'day', in: ['2026-02-30'] },
      resource: '/filters/0/in/0',
      description: 'day: expected a date YYYY-MM-DD, got "2026-02-30"',
    },
    { filter: { field: 'won', in: ['True'] }, resource: '/filters/0/in/0', description: 'won: expected a boolean, got "True"' },
    {
      filter: { field: 'types', in: ['new;upsell'] },
      resource: '/filters/0/in/0',
      description: expect.stringContaining('one of its values'),
    },
    { filter: { field: 'types', in: [' '] }, resource: '/filters/0/in/0', description: expect.stringContaining('one of its values') },
    { filter: { field: 'id', in: [' '] }, resource: '/filters/0/in/0', description: 'id: the id field is required' },
    {
      filter: { field: 'types', contains: 'a;b' },
      resource: '/filters/0/contains',
      description: expect.stringContaining('one of its values'),
    },
  ])('refuses $filter.field $resource, which no record could hold', ({ filter, resource, description }) => {
    expect(resolved([filter as PlanFilter]).issues).toEqual([{ resource, description }])
  })

  it('states a record whose value the filter names in another form', () => {
    const owner: User = aUser(COMPANY, { email: 'ann@filters.example', currency: 'EUR' })
    const record = (id: string, values: Record<string, unknown>): DataTableRecord => {
      const parsed = parseRecord(table, {
        id,
        owner: owner.email,
        closed_at: '2026-05-10T10:00:00Z',
        amount: 1_000,
        amount_currency: 'EUR',
        ...values,
      })
      expect(parsed.problems).toEqual([])
      return {
        id,
        company_id: COMPANY,
        table_id: table.id,
        external_id: id,
        values: parsed.values,
        overrides: {},
        created_at: CREATED,
        modified_at: CREATED,
      }
    }
    const records = [record('kept', { units: 1.5, won: true }), record('left', { units: 2, won: true })]
    const { plan } = resolved([
      { field: 'units', in: ['1.50'] },
      { field: 'closed_at', in: ['2026-05-10T12:00:00+02:00'] },
      { field: 'won', in: ['true'] },
      { field: 'id', in: [' kept', ' left '] },
    ])
    const { cells, problems } = calculatePlan(
      { plan, records, users: userDirectory([owner]), quota: null, quotaValues: new Map() },
      { defaultCurrency: 'EUR', fiscalYearStartMonth: 1, exchangeRates: {} },
    )
    expect(problems).toEqual([])
    const lines = [...cells.values()].flatMap((cell) => cell.lines)
    expect(lines.map((line) => [line.record_id, line.commission])).toEqual([['kept', 100]])
  })
})
