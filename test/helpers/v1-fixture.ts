import type { Fixture } from '../../src/fixtures/schema.ts'
import { smallFixture } from './fixtures.ts'

/**
 * The small company, grown so that every v1 list has six or more rows to page through, with a data table
 * of every field type and a sandbox-only table.
 */
export function v1Fixture(name = 'Acme'): Fixture {
  const fixture = smallFixture(name)
  const domain = `${name.toLowerCase()}.example`
  const extraUsers = [1, 2, 3].map((n) => ({
    email: `extra${n}@${domain}`,
    name: `Extra ${n}`,
    role: 'sales',
    currency: 'EUR',
    attributes: { region: `R${n}` },
  }))
  fixture.users.push(...extraUsers)
  const deals = fixture.data_tables![0]
  for (const n of [3, 4, 5, 6]) {
    deals.records!.push({ deal_id: `D-${n}`, deal_name: `Deal ${n}`, amount: n * 100, amount_currency: 'EUR', deal_types: 'new' })
    fixture.commission_lines!.push({
      data_table: 'deals',
      record: `D-${n}`,
      user: extraUsers[n % 3].email,
      plan: 'Sales 2026',
      date: '2026-02-10',
      commission: n * 10,
      currency: 'EUR',
      metrics: { bonus: { value: n, currency: 'EUR' } },
    })
  }
  for (const [index, user] of extraUsers.entries()) {
    fixture.statements!.push({
      user: user.email,
      date: '2026-02-28',
      plan: 'Sales 2026',
      status: 'paid',
      currency: 'EUR',
      payment: 100 + index,
      target: null,
      metrics: { attainment: 0.5 + index / 10, bonus: { value: index, currency: 'USD' } },
      dimensions: { region: [`R${index + 1}`], teams: ['North', 'South'] },
    })
  }
  fixture.data_tables!.push(
    {
      key: 'events',
      name: 'Events',
      id_field: 'event_id',
      name_field: 'title',
      fields: [
        { api_key: 'event_id', name: 'Id', type: 'number' },
        { api_key: 'title', name: 'Title', type: 'string' },
        { api_key: 'happened_at', name: 'Happened at', type: 'datetime' },
        { api_key: 'day', name: 'Day', type: 'date' },
        { api_key: 'billable', name: 'Billable', type: 'boolean' },
        { api_key: 'fee', name: 'Fee', type: 'amount' },
        { api_key: 'tags', name: 'Tags', type: 'multi' },
      ],
      records: [
        {
          event_id: 7,
          title: 'Kick-off',
          happened_at: '2026-01-15T10:30:00+02:00',
          day: '2026-01-15',
          billable: true,
          fee: 12.5,
          fee_currency: 'USD',
          tags: ['a', 'b'],
        },
        { event_id: 8, title: 'Sparse' },
      ],
    },
    {
      key: 'leads',
      name: 'Sandbox leads',
      environment: 'sandbox',
      id_field: 'lead_id',
      name_field: 'lead_id',
      fields: [{ api_key: 'lead_id', name: 'Id', type: 'string' }],
      records: [{ lead_id: 'L-1' }],
    },
  )
  return fixture
}
