import type { Fixture } from '../../src/fixtures/schema.ts'

/**
 * A small company with one of everything, live and sandbox, for route tests. Each call returns a new
 * document, so a test may change it freely; `name` tells companies apart in tenant tests.
 */
export function smallFixture(name = 'Acme'): Fixture {
  const domain = `${name.toLowerCase()}.example`
  return {
    company: { name, default_currency: 'EUR' },
    user_attributes: [
      { api_key: 'region', name: 'Region', type: 'string' },
      { api_key: 'base_salary', name: 'Base salary', type: 'amount' },
    ],
    users: [
      {
        email: `owner@${domain}`,
        name: 'Olive Owner',
        role: 'admin',
        currency: 'EUR',
        attributes: { region: 'EMEA', base_salary: 50000, base_salary_currency: 'EUR' },
      },
      { email: `rep@${domain}`, name: 'Rita Rep', role: 'sales', currency: 'USD' },
      { email: `gone@${domain}`, name: 'Gary Gone', status: 'archived' },
    ],
    custom_metrics: [
      { api_key: 'attainment', name: 'Attainment', kind: 'percentage' },
      { api_key: 'tier', name: 'Tier', kind: 'enum', enum_values: ['bronze', 'silver', 'gold'] },
      { api_key: 'bonus', name: 'Bonus', kind: 'amount', currencies: ['EUR', 'USD'] },
    ],
    data_tables: [
      {
        key: 'deals',
        name: 'Deals',
        id_field: 'deal_id',
        name_field: 'deal_name',
        fields: [
          { api_key: 'deal_id', name: 'Deal id', type: 'string' },
          { api_key: 'deal_name', name: 'Deal name', type: 'string' },
          { api_key: 'amount', name: 'Amount', type: 'amount' },
          { api_key: 'deal_types', name: 'Deal types', type: 'multi' },
        ],
        records: [
          { deal_id: 'D-1', deal_name: 'First deal', amount: 1000, amount_currency: 'EUR', deal_types: 'new;upsell' },
          { deal_id: 'D-2', deal_name: 'Second deal', amount: 2500, amount_currency: 'USD', deal_types: 'renewal' },
        ],
      },
      {
        key: 'deals',
        name: 'Sandbox deals',
        environment: 'sandbox',
        id_field: 'deal_id',
        name_field: 'deal_name',
        fields: [
          { api_key: 'deal_id', name: 'Deal id', type: 'string' },
          { api_key: 'deal_name', name: 'Deal name', type: 'string' },
        ],
        records: [{ deal_id: 'S-1', deal_name: 'Sandbox deal' }],
      },
    ],
    reporting_structures: [
      { name: 'Statements', type: 'statement_reporting', metrics: ['attainment', 'tier', 'bonus'] },
      {
        name: 'Deal commissions',
        type: 'record_reporting',
        data_table: 'deals',
        metrics: ['bonus'],
        fields: ['deal_name', 'amount', 'deal_types'],
      },
      { name: 'Sandbox statements', type: 'statement_reporting', environment: 'sandbox' },
      { name: 'Sandbox deals', type: 'record_reporting', environment: 'sandbox', data_table: 'deals' },
    ],
    statements: [
      {
        user: `owner@${domain}`,
        date: '2026-01-31',
        plan: 'Sales 2026',
        status: 'paid',
        currency: 'EUR',
        payment: 1200,
        target: 1000,
        target_achievement: 1.2,
        on_target_earning: 1000,
        achievement: 1200,
        metrics: { attainment: 1.2, tier: 'gold', bonus: { value: 200, currency: 'EUR' } },
        dimensions: { region: ['EMEA'] },
        modified_at: '2026-02-01T10:00:00Z',
      },
      {
        user: `rep@${domain}`,
        date: '2026-01-31',
        plan: 'Sales 2026',
        status: 'pending',
        currency: 'USD',
        payment: 800,
        metrics: { attainment: 0.8, tier: 'silver' },
        modified_at: '2026-02-02T10:00:00Z',
      },
      {
        user: `rep@${domain}`,
        date: '2026-02-28',
        plan: 'Sales 2026',
        status: 'validated',
        currency: 'USD',
        payment: 900,
        modified_at: '2026-03-01T10:00:00Z',
      },
      {
        user: `owner@${domain}`,
        environment: 'sandbox',
        date: '2026-01-31',
        plan: 'Sandbox plan',
        status: 'paid',
        currency: 'EUR',
        payment: 1,
      },
    ],
    commission_lines: [
      {
        data_table: 'deals',
        record: 'D-1',
        user: `owner@${domain}`,
        plan: 'Sales 2026',
        date: '2026-01-15',
        commission: 100,
        currency: 'EUR',
        metrics: { bonus: { value: 10, currency: 'EUR' } },
      },
      {
        data_table: 'deals',
        record: 'D-2',
        user: `rep@${domain}`,
        plan: 'Sales 2026',
        date: '2026-01-20',
        commission: 250,
        currency: 'USD',
      },
      {
        data_table: 'deals',
        environment: 'sandbox',
        record: 'S-1',
        user: `rep@${domain}`,
        plan: 'Sandbox plan',
        date: '2026-01-20',
        commission: 1,
        currency: 'USD',
      },
    ],
    quotas: [
      {
        name: 'Monthly bookings',
        type: 'amount',
        frequency: 'monthly',
        currency: 'EUR',
        values: [
          { user: `owner@${domain}`, period: '2026-01', value: 10000, modified_at: '2026-01-05T00:00:00Z' },
          { user: `rep@${domain}`, period: '2026-01', value: 8000, source: 'integration' },
          { user_id: '0123456789abcdef01234567', period: '2026-02', value: 5000 },
        ],
      },
      {
        name: 'Quarterly attainment',
        type: 'percentage',
        frequency: 'quarterly',
        values: [{ user: `rep@${domain}`, period: '2026-Q1', value: 0.85 }],
      },
      {
        name: 'Old target',
        type: 'float',
        frequency: 'annually',
        status: 'archived',
        values: [{ user: `owner@${domain}`, period: '2025', value: 3.5 }],
      },
      {
        name: 'Sandbox quota',
        type: 'amount',
        frequency: 'monthly',
        environment: 'sandbox',
        values: [{ user: `rep@${domain}`, period: '2026-01', value: 1 }],
      },
    ],
    api_keys: [{ user: `owner@${domain}` }, { user: `rep@${domain}` }],
  }
}

/** A company whose one seller closes a deal in each of `dates`, paid by a monthly plan. */
export function plannedFixture(name: string, dates: string[]): Fixture {
  return {
    company: { name, default_currency: 'EUR' },
    users: [{ email: 'admin@planned.example' }, { email: 'seller@planned.example' }],
    data_tables: [
      {
        key: 'deals',
        name: 'Deals',
        id_field: 'id',
        name_field: 'name',
        fields: [
          { api_key: 'id', name: 'Id', type: 'string' },
          { api_key: 'name', name: 'Name', type: 'string' },
          { api_key: 'owner', name: 'Owner', type: 'string' },
          { api_key: 'closed', name: 'Closed', type: 'date' },
          { api_key: 'amount', name: 'Amount', type: 'amount' },
        ],
        records: dates.map((date, index) => ({
          id: `D-${index}`,
          name: `Deal ${index}`,
          owner: 'seller@planned.example',
          closed: date,
          amount: 1000,
          amount_currency: 'EUR',
        })),
      },
    ],
    reporting_structures: [{ name: 'Statements', type: 'statement_reporting' }],
    plans: [
      {
        name: 'Sales',
        data_table: 'deals',
        user_field: 'owner',
        date_field: 'closed',
        amount_field: 'amount',
        frequency: 'monthly',
        rate: 0.1,
      },
    ],
    api_keys: [{ user: 'admin@planned.example' }],
  }
}
