import { describe, expect, it } from 'vitest'
import type { CustomMetric, MetricKind } from '../src/store/model.ts'
import type { StatementRowFields } from '../src/store/port.ts'
import { type Emails, type Row, statementRenderer } from '../src/v2/rows.ts'
import { pageBytes, statementTexts } from '../src/v2/statement-texts.ts'

/**
 * The text of v2 statement rows rendered ahead of reads (src/v2/statement-texts.ts), without a server: a page
 * written from row texts is byte for byte what `JSON.stringify({data, meta})` gives for the row objects of
 * src/v2/rows.ts, whatever the values hold; and the key of renderings names exactly the metric columns shown.
 */

let sequence = 0
/** A custom metric; the fields the rendering does not depend on vary from one call to the next. */
function metric(api_key: string, kind: MetricKind, overrides: Partial<CustomMetric> = {}): CustomMetric {
  sequence += 1
  return {
    id: `66000000000000000000${String(sequence).padStart(4, '0')}`,
    company_id: '650000000000000000000001',
    api_key,
    name: `${api_key} #${sequence}`,
    kind,
    currencies: kind === 'amount' ? ['EUR', 'USD'] : null,
    enum_values: kind === 'enum' ? ['bronze', 'silver', 'gold'] : null,
    created_at: `2026-01-0${(sequence % 9) + 1}T00:00:00.000Z`,
    modified_at: '2026-01-01T00:00:00.000Z',
    ...overrides,
  }
}

/** One metric of every kind, amounts with and without currencies of their own. */
const everyKind = (): CustomMetric[] => [
  metric('bonus', 'amount'),
  metric('fee', 'amount', { currencies: null }),
  metric('attainment', 'percentage'),
  metric('score', 'float'),
  metric('tier', 'enum'),
  metric('note', 'text'),
  metric('closed_on', 'date'),
]

const USERS = {
  accented: '650000000000000000000011',
  escaped: '650000000000000000000012',
  unknown: '650000000000000000000013',
}
/** Emails with non-ASCII characters, quotes, backslashes and control characters; the unknown user has none. */
const EMAILS: Emails = new Map([
  [USERS.accented, 'josé.日本🎉@exämple.test'],
  [USERS.escaped, 'q"uo\\te\n\t\u0001\u2028@example.test'],
])

let statementSequence = 0
function statement(overrides: Partial<StatementRowFields>): StatementRowFields {
  statementSequence += 1
  return {
    id: `67000000000000000000${String(statementSequence).padStart(4, '0')}`,
    user_id: USERS.accented,
    date: '2026-01-31',
    status: 'paid',
    currency: 'EUR',
    payment: 1200,
    metrics: {},
    ...overrides,
  }
}

/** Statements covering every kind, missing and mistyped values, null payments, mixed currencies and awkward text. */
const STATEMENTS: StatementRowFields[] = [
  statement({
    metrics: {
      bonus: { value: 200, currency: 'USD' },
      fee: 15,
      attainment: 1.2,
      score: -0.5,
      tier: 'gold',
      note: 'é, 日本 and 🎉',
      closed_on: '2026-01-10',
    },
  }),
  statement({
    user_id: USERS.escaped,
    status: 'pending',
    currency: 'USD',
    payment: null,
    metrics: {
      bonus: { value: 0.1 + 0.2 },
      fee: { value: 3 },
      note: 'say "hi" \\ back\\slash \n\r\t\b\f \u0000\u0001\u001f\u007f \u2028\u2029 </script>',
      closed_on: '2026-01-10T23:30:00-02:00',
    },
  }),
  // Values of the wrong type for their kind.
  statement({
    user_id: USERS.unknown,
    status: 'validated',
    currency: 'GBP',
    payment: 0,
    metrics: { bonus: 'lots', fee: [], attainment: '12%', score: { value: 2, currency: 'EUR' }, tier: 7, note: true, closed_on: 'soon' },
  }),
  // No metric values at all, and numbers at the edges of their text form.
  statement({ payment: -0, metrics: {} }),
  statement({
    currency: 'JPY',
    payment: 1e21,
    metrics: { score: 5e-324, attainment: Number.MAX_SAFE_INTEGER, note: 'lone \ud800 surrogate', tier: null },
  }),
  statement({
    user_id: USERS.escaped,
    date: '2025-12-31',
    currency: 'USD',
    payment: 12.5,
    metrics: { closed_on: '2025-12-31T23:59:59.999Z', unknown_metric: 'ignored' },
  }),
]

/** The row objects of src/v2/rows.ts for these statements: what a page held before rows were rendered as text. */
function rowObjects(metrics: readonly CustomMetric[], statements: readonly StatementRowFields[]): Row[] {
  const render = statementRenderer(metrics)
  return statements.map((item) => render(item, EMAILS.get(item.user_id) ?? null))
}

/** The row texts the extraction hands to `pageBytes`. */
function rowTexts(metrics: readonly CustomMetric[], statements: readonly StatementRowFields[]): string[] {
  const texts = statementTexts(metrics)
  return statements.map((item) => texts.row(item, EMAILS.get(item.user_id) ?? null))
}

/** What two pages are compared by: their text, for a readable difference, and every byte. */
const bytesOf = (page: Buffer) => ({ text: page.toString('utf8'), length: page.length, hex: page.toString('hex') })

type Meta = { next_start_id: string | null; has_more: boolean; next_url: string | null }
const END: Meta = { next_start_id: null, has_more: false, next_url: null }

/** The page as the extraction writes it, from row texts. */
const written = (metrics: readonly CustomMetric[], statements: readonly StatementRowFields[], meta: Meta) =>
  pageBytes(rowTexts(metrics, statements), JSON.stringify(meta))
/** The page as JSON.stringify writes the row objects. */
const stringified = (metrics: readonly CustomMetric[], statements: readonly StatementRowFields[], meta: Meta) =>
  Buffer.from(JSON.stringify({ data: rowObjects(metrics, statements), meta }))

const TABLE_URL = 'http://127.0.0.1:3000/v2/reporting/650000000000000000000099/statements'

describe('pageBytes', () => {
  const metas: Array<[string, Meta]> = [
    ['has_more true', { next_start_id: STATEMENTS[5].id, has_more: true, next_url: `${TABLE_URL}?start_id=${STATEMENTS[5].id}&limit=6` }],
    ['has_more false', END],
  ]

  it.each(metas)('writes a page of every kind of value byte for byte as JSON.stringify({data, meta}) writes it (%s)', (_name, meta) => {
    const metrics = everyKind()
    expect(bytesOf(written(metrics, STATEMENTS, meta))).toStrictEqual(bytesOf(stringified(metrics, STATEMENTS, meta)))
  })

  it.each(metas)('writes an empty page as JSON.stringify({data: [], meta}) writes it (%s)', (_name, meta) => {
    expect(bytesOf(written(everyKind(), [], meta))).toStrictEqual(bytesOf(Buffer.from(JSON.stringify({ data: [], meta }))))
  })

  it('writes one row, and rows of a structure showing no metrics, the same way', () => {
    const metrics = everyKind()
    expect(bytesOf(written(metrics, STATEMENTS.slice(1, 2), END))).toStrictEqual(bytesOf(stringified(metrics, STATEMENTS.slice(1, 2), END)))
    expect(bytesOf(written([], STATEMENTS, END))).toStrictEqual(bytesOf(stringified([], STATEMENTS, END)))
  })

  it('writes a page whose text is mostly characters of three and four UTF-8 bytes without losing any', () => {
    const metrics = [metric('note', 'text')]
    const wide = STATEMENTS.map((item, index) => ({ ...item, metrics: { note: (index % 2 === 0 ? '日本語' : '🎉🎊').repeat(500) } }))
    const expected = stringified(metrics, wide, END)
    expect(bytesOf(written(metrics, wide, END))).toStrictEqual(bytesOf(expected))
    expect(expected.length).toBeGreaterThan(3 * 3 * 1500)
  })

  it('renders the awkward values as rows.ts defines them (the oracle above is not itself wrong)', () => {
    const [first, second, third] = rowObjects(everyKind(), STATEMENTS)
    expect(first).toMatchObject({
      'custom.bonus': { value: 200, currency: 'USD' },
      'custom.fee': { value: 15, currency: 'EUR' },
      'custom.closed_on': '2026-01-10',
    })
    expect(second).toMatchObject({
      'standard.user': { id: USERS.escaped, email: 'q"uo\\te\n\t\u0001\u2028@example.test' },
      'standard.total_commission': null,
      'custom.bonus': { value: 0.1 + 0.2, currency: 'USD' },
      'custom.fee': { value: 3, currency: 'USD' },
      'custom.closed_on': '2026-01-11',
    })
    expect(third).toMatchObject({
      'standard.user': { id: USERS.unknown, email: null },
      'custom.bonus': null,
      'custom.fee': null,
      'custom.attainment': null,
      'custom.score': 2,
      // 7 is none of the enum's values.
      'custom.tier': null,
      'custom.note': 'true',
      'custom.closed_on': null,
    })
  })
})

const keyOf = (metrics: CustomMetric[]) => statementTexts(metrics).key

describe('statementTexts', () => {
  describe('key', () => {
    it('is the same for equal metric columns, whatever the metrics’ ids, names, creation times and currencies', () => {
      const other = everyKind().map((item) =>
        metric(item.api_key, item.kind, {
          currencies: item.kind === 'amount' ? ['GBP'] : null,
          enum_values: item.kind === 'enum' ? ['bronze', 'silver', 'gold'] : ['ignored'],
          company_id: '650000000000000000000002',
        }),
      )
      expect(other.map((item) => item.id)).not.toEqual(everyKind().map((item) => item.id))
      expect(keyOf(other)).toBe(keyOf(everyKind()))
      expect(keyOf([])).toBe(keyOf([]))
      expect(keyOf(everyKind())).toMatch(/^[0-9a-f]{16}$/)
    })

    it('changes when an enum’s values change, since a value no longer allowed reads as null', () => {
      const metrics = everyKind()
      const narrowed = metrics.map((item) => (item.kind === 'enum' ? { ...item, enum_values: ['gold'] } : item))
      expect(keyOf(narrowed)).not.toBe(keyOf(metrics))
    })

    it.each(['amount', 'percentage', 'float', 'enum', 'text', 'date'] as const)('changes when one metric’s kind changes to %s', (kind) => {
      const metrics = everyKind()
      for (const [index, item] of metrics.entries()) {
        if (item.kind === kind) continue
        const changed = metrics.map((other, otherIndex) => (otherIndex === index ? { ...other, kind } : other))
        expect(keyOf(changed), `${item.api_key} ${item.kind} → ${kind}`).not.toBe(keyOf(metrics))
      }
    })

    it('changes when the order of the metrics changes, when one is added or removed, or when an api_key differs', () => {
      const metrics = everyKind()
      const keys = [
        keyOf(metrics),
        keyOf(metrics.toReversed()),
        keyOf([metrics[1], metrics[0], ...metrics.slice(2)]),
        keyOf(metrics.slice(1)),
        keyOf(metrics.slice(0, -1)),
        keyOf([...metrics, metric('extra', 'float')]),
        keyOf([{ ...metrics[0], api_key: 'bonus2' }, ...metrics.slice(1)]),
        keyOf([]),
        keyOf([metric('score', 'float')]),
        keyOf([metric('score', 'percentage')]),
      ]
      expect(new Set(keys).size).toBe(keys.length)
    })
  })

  describe('row', () => {
    it('is the row object as JSON text, its keys in the field schema’s order', () => {
      const metrics = everyKind()
      const { row } = statementTexts(metrics)
      const [expected] = rowObjects(metrics, [STATEMENTS[0]])
      const parsed = JSON.parse(row(STATEMENTS[0], EMAILS.get(STATEMENTS[0].user_id) ?? null))
      expect(parsed).toStrictEqual(JSON.parse(JSON.stringify(expected)))
      expect(Object.keys(parsed)).toEqual([
        'standard.id',
        'standard.user',
        'standard.date',
        'standard.total_commission',
        'standard.status',
        ...metrics.map((item) => `custom.${item.api_key}`),
      ])
      expect(Object.keys(parsed['standard.user'])).toEqual(['id', 'email'])
    })

    it('shows the email it is given, or null', () => {
      const { row } = statementTexts([])
      const item = STATEMENTS[0]
      expect(JSON.parse(row(item, 'new@example.test'))['standard.user']).toStrictEqual({ id: item.user_id, email: 'new@example.test' })
      expect(JSON.parse(row(item, null))['standard.user']).toStrictEqual({ id: item.user_id, email: null })
    })

    it('follows the metric columns it was made for: another kind renders the same value another way', () => {
      const item = STATEMENTS[0]
      const head = `{"standard.id":"${item.id}","standard.user":{"id":"${item.user_id}","email":"a@b.c"},`
      const standard = '"standard.date":"2026-01-31","standard.total_commission":{"value":1200,"currency":"EUR"},"standard.status":"paid"'
      expect(statementTexts([metric('bonus', 'float')]).row(item, 'a@b.c')).toBe(`${head}${standard},"custom.bonus":200}`)
      expect(statementTexts([metric('bonus', 'text')]).row(item, 'a@b.c')).toBe(`${head}${standard},"custom.bonus":null}`)
    })
  })
})
