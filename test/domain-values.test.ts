import { describe, expect, it } from 'vitest'
import { isDateString, parseInstant } from '../src/domain/formats.ts'
import { isObjectId, storedId } from '../src/domain/ids.ts'
import {
  amountKeyOf,
  centsOf,
  currencyKey,
  flatAmount,
  isMoney,
  moneyOf,
  numberOf,
  roundDecimal,
  roundToCents,
} from '../src/domain/money.ts'
import {
  addMonths,
  firstMonthOfPeriod,
  LAST_MONTH,
  managesWhileArchived,
  monthRangeWithout,
  monthText,
  periodOfMonth,
  shiftMonth,
} from '../src/domain/periods.ts'
import { joinMulti, splitMulti } from '../src/domain/record-values.ts'
import { metricValue, multiText } from '../src/domain/stored-values.ts'
import { AscendingIds, newId } from '../src/ids.ts'
import { QUOTA_FREQUENCIES } from '../src/store/model.ts'

const range = (start_month: string | null, end_month: string | null) => ({ start_month, end_month })

describe('periods', () => {
  it('finds the first month of every period of every frequency and fiscal year start, the inverse of periodOfMonth', () => {
    for (const frequency of QUOTA_FREQUENCIES) {
      for (let fiscalStart = 1; fiscalStart <= 12; fiscalStart++) {
        for (let index = 2024 * 12; index < 2027 * 12; index++) {
          const month = { year: Math.floor(index / 12), month: (index % 12) + 1 }
          const period = periodOfMonth(frequency, month.year, month.month, fiscalStart)
          const first = firstMonthOfPeriod(frequency, period, fiscalStart)
          expect(first && monthText(first) <= monthText(month)).toBe(true)
          expect(first && periodOfMonth(frequency, first.year, first.month, fiscalStart)).toBe(period)
          // The month before the first belongs to the previous period.
          const before = first ? first.year * 12 + first.month - 2 : 0
          expect(periodOfMonth(frequency, Math.floor(before / 12), (before % 12) + 1, fiscalStart)).not.toBe(period)
        }
      }
    }
  })

  it('reads fiscal periods as the documentation writes them', () => {
    expect(firstMonthOfPeriod('quarterly', '2026-Q1', 4)).toEqual({ year: 2025, month: 4 })
    expect(firstMonthOfPeriod('semesterly', '2026-S2', 7)).toEqual({ year: 2026, month: 1 })
    expect(firstMonthOfPeriod('annually', '2026', 1)).toEqual({ year: 2026, month: 1 })
    expect(firstMonthOfPeriod('monthly', '2026-13', 1)).toBeNull()
    expect(firstMonthOfPeriod('quarterly', '2026-03', 1)).toBeNull()
  })

  it('moves months across years, in both directions', () => {
    expect(addMonths({ year: 2026, month: 1 }, -1)).toEqual({ year: 2025, month: 12 })
    expect(addMonths({ year: 2025, month: 11 }, 14)).toEqual({ year: 2027, month: 1 })
    expect(shiftMonth('2026-01', -13)).toBe('2024-12')
    expect(shiftMonth('0001-01', -1)).toBe('0000-12')
    // Before year 0, as fiscal year 0000 of a year that starts in April begins.
    expect(addMonths({ year: 0, month: 4 }, -12)).toEqual({ year: -1, month: 4 })
    expect(addMonths({ year: 0, month: 1 }, -1)).toEqual({ year: -1, month: 12 })
  })

  it('takes months out of a range: the parts before and after remain, open ends included', () => {
    expect(monthRangeWithout(range('2026-01', '2026-12'), range('2026-04', '2026-06'))).toEqual([
      range('2026-01', '2026-03'),
      range('2026-07', '2026-12'),
    ])
    expect(monthRangeWithout(range(null, null), range('2026-04', null))).toEqual([range(null, '2026-03')])
    expect(monthRangeWithout(range('2026-01', '2026-03'), range('2026-04', null))).toEqual([range('2026-01', '2026-03')])
    expect(monthRangeWithout(range('2026-05', '2026-06'), range(null, null))).toEqual([])
    // Nothing comes after 9999-12, nor before 0000-01: no piece of a month that cannot be written.
    expect(monthRangeWithout(range('2026-01', null), range('2027-01', '9999-12'))).toEqual([range('2026-01', '2026-12')])
    expect(monthRangeWithout(range(null, '2030-12'), range('0000-01', '2026-12'))).toEqual([range('2027-01', '2030-12')])
  })
})

describe('money', () => {
  it.each([
    [1.005, 1.01],
    [-1.005, -1.01],
    [2.675, 2.68],
    [0.004, 0],
    [-0.004, 0],
    [55.5555, 55.56],
    // Just under a half cent, written with ten decimals: under it stays.
    [1234.564999999, 1234.56],
    [1.004999999, 1],
    [61.725, 61.73],
    [123456789.125, 123456789.13],
    // Whole amounts past 10¹³, whose cents the margin for 1.005 used to move.
    [1e13, 1e13],
    [25_000_000_000_000, 25_000_000_000_000],
    [50_000_000_000_000, 50_000_000_000_000],
    [1e14, 1e14],
    [1e15, 1e15],
    [10_000_000_000_000.01, 10_000_000_000_000.01],
    [20_000_000_000_000.01, 20_000_000_000_000.01],
    // Past what times 100 can hold: kept as it is, not lost to Infinity.
    [1e307, 1e307],
    [-1.7e308, -1.7e308],
  ])('rounds %d to the cent: %d', (value, rounded) => {
    expect(Object.is(roundToCents(value), rounded)).toBe(true)
  })

  it.each([
    [0.80085, 0.8009],
    [0.12345, 0.1235],
    [-0.12345, -0.1235],
    [-0.00005, -0.0001],
    [-0.00001, 0],
    [-0.000049, 0],
    [0.80084999, 0.8008],
  ])('rounds %d to four decimals, halves away from zero and never to -0: %d', (value, rounded) => {
    expect(Object.is(roundDecimal(value, 4), rounded)).toBe(true)
  })

  it('counts cents without binary noise', () => {
    expect(centsOf([0.1, 0.2])).toBe(30)
    expect(centsOf(Array.from({ length: 1000 }, () => 0.01))).toBe(1000)
  })
})

describe('isDateString: a real calendar date, checked by arithmetic', () => {
  it.each([
    ['2024-02-29', true],
    ['2023-02-29', false],
    ['1900-02-29', false],
    ['2000-02-29', true],
    ['0000-02-29', true],
    ['2026-04-30', true],
    ['2026-04-31', false],
    ['2026-12-31', true],
    ['9999-12-31', true],
    ['2026-13-01', false],
    ['2026-00-10', false],
    ['2026-01-00', false],
    ['2026-1-01', false],
    ['2026-01-01T00:00:00Z', false],
  ])('%s → %s, as Date reads the calendar', (value, expected) => {
    expect(isDateString(value)).toBe(expected)
    const date = new Date(`${value}T00:00:00Z`)
    expect(!Number.isNaN(date.getTime()) && date.toISOString().startsWith(value)).toBe(expected)
  })
})

describe('parseInstant: an ISO 8601 date or date-time as an instant', () => {
  it.each([
    ['2026-01-31T10:00:00Z', '2026-01-31T10:00:00.000Z'],
    ['2026-01-31T10:00:00+02:00', '2026-01-31T08:00:00.000Z'],
    ['2026-01-31T10:00:00+0200', '2026-01-31T08:00:00.000Z'],
    ['2026-01-31T10:00:00+02', '2026-01-31T08:00:00.000Z'],
    ['2026-01-31T10:00:00.123456-05', '2026-01-31T15:00:00.123Z'],
    ['2026-01-31t10:00:00z', '2026-01-31T10:00:00.000Z'],
    ['2026-01-31T10:00', '2026-01-31T10:00:00.000Z'],
    ['2026-01-31', '2026-01-31T00:00:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
    ['0000-01-01T00:30:00+00:30', '0000-01-01T00:00:00.000Z'],
  ])('reads %s as %s', (text, instant) => {
    expect(parseInstant(text)?.toISOString()).toBe(instant)
  })

  it.each([
    '2026-01-31T10:00:00+2',
    '2026-01-31T10:00:00+02:0',
    '2026-01-31T10:00:00+020',
    '2026-02-30T10:00:00Z',
    '2026-01-31-05',
    '2026-01-31 10:00:00Z',
    // Hours run to 23: Date reads 24:00 as the next midnight, which RFC 3339 (and the fixture's schema) does not.
    '2026-01-31T24:00Z',
    '2026-01-31T24:00:00+02:00',
    // Past the end of year 9999, or before year 0, in UTC: no four-digit year writes them.
    '9999-12-31T23:30:00-05:00',
    '0000-01-01T00:30:00+01:00',
    '',
    20260131,
  ])('refuses %s', (text) => {
    expect(parseInstant(text)).toBeNull()
  })
})

const DATE_METRIC = { kind: 'date', enum_values: null } as const

describe('metricValue of a date metric', () => {
  it('reads a date-time without an offset as UTC, whatever the process’s time zone (renderings made in one process are read in another)', () => {
    const zone = process.env.TZ
    try {
      for (const timeZone of ['UTC', 'America/New_York', 'Asia/Tokyo']) {
        process.env.TZ = timeZone
        expect(metricValue(DATE_METRIC, '2026-01-10T23:30:00', 'EUR'), timeZone).toBe('2026-01-10')
        expect(metricValue(DATE_METRIC, '2026-01-10T23:30:00-05:00', 'EUR'), timeZone).toBe('2026-01-11')
      }
    } finally {
      if (zone === undefined) delete process.env.TZ
      else process.env.TZ = zone
    }
  })
})

describe('ids', () => {
  it('reads an id as a client sends it in its stored form, lower case; anything but 24 hex digits names nothing', () => {
    const id = newId()
    expect(isObjectId(id)).toBe(true)
    expect(storedId(id.toUpperCase())).toBe(id)
    expect(storedId(id)).toBe(id)
    expect(isObjectId(id.toUpperCase())).toBe(false)
    for (const malformed of ['', 'deals', `${id}0`, id.slice(1), `${id.slice(1)}g`]) expect(storedId(malformed), malformed).toBeNull()
  })

  it("makes ascending ids after a floor that sorts after this process's own ids (another process, the same second)", () => {
    const own = newId()
    // The same second, the greatest value a process can draw, near the end of its counter.
    const floor = `${own.slice(0, 8)}ffffffffffffff00`
    const ids = new AscendingIds(floor)
    const made = Array.from({ length: 50 }, () => ids.next())
    expect(made.every(isObjectId)).toBe(true)
    expect([floor, ...made]).toStrictEqual([floor, ...made].toSorted())
    expect(new Set(made).size).toBe(50)
    // Without a floor, the process's own ids, which already ascend.
    const fresh = new AscendingIds(null).next()
    expect(fresh > own).toBe(true)
  })
})

describe('amounts', () => {
  it('are a number with a currency code as text', () => {
    expect(isMoney({ value: 10, currency: 'EUR' })).toBe(true)
    expect(isMoney({ value: 10 })).toBe(false)
    expect(isMoney({ value: 10, currency: null })).toBe(false)
    expect(isMoney({ value: '10', currency: 'EUR' })).toBe(false)
    expect(isMoney(10)).toBe(false)
  })

  it("read from a stored value: a number or an amount without a currency takes the row's, none without one", () => {
    expect(moneyOf({ value: 10, currency: 'USD' }, 'EUR')).toEqual({ value: 10, currency: 'USD' })
    expect(moneyOf(10, 'EUR')).toEqual({ value: 10, currency: 'EUR' })
    expect(moneyOf({ value: 10, currency: 5 }, 'EUR')).toEqual({ value: 10, currency: 'EUR' })
    expect(moneyOf({ value: 10, currency: 'USD' }, null)).toEqual({ value: 10, currency: 'USD' })
    expect(moneyOf({ value: 10 }, null)).toBeNull()
    expect(moneyOf(10, null)).toBeNull()
    expect(moneyOf('10', 'EUR')).toBeNull()
    expect(numberOf({ value: 10, currency: 'USD' })).toBe(10)
    expect(numberOf('10')).toBeNull()
  })

  it("in v1's flat form: the number under the key, its currency beside it; anything else with a null currency", () => {
    expect(currencyKey('amount')).toBe('amount_currency')
    expect(amountKeyOf('amount_currency')).toBe('amount')
    expect(amountKeyOf('amount')).toBeNull()
    expect(flatAmount('bonus', { value: 5, currency: 'EUR' })).toEqual([
      ['bonus', 5],
      ['bonus_currency', 'EUR'],
    ])
    expect(flatAmount('bonus', 0.5)).toEqual([
      ['bonus', 0.5],
      ['bonus_currency', null],
    ])
    expect(flatAmount('bonus', null)).toEqual([
      ['bonus', null],
      ['bonus_currency', null],
    ])
    expect(flatAmount('bonus', undefined)).toEqual([
      ['bonus', null],
      ['bonus_currency', null],
    ])
  })
})

const from = (start_month: string | null, end_month: string | null) => ({ start_month, end_month })

describe('managesWhileArchived: the archive rule', () => {
  it('holds when the attribution reaches a month of the archive period in which the person managed is still active', () => {
    expect(managesWhileArchived(from('2026-01', null), '2026-07', LAST_MONTH)).toBe(true)
    expect(managesWhileArchived(from(null, '2026-07'), '2026-07', '2026-09')).toBe(true)
    expect(managesWhileArchived(from('2026-08', '2026-08'), null, '2026-08')).toBe(true)
  })
  it('does not hold before the archive period, nor once the person managed is no longer active', () => {
    expect(managesWhileArchived(from('2026-01', '2026-06'), '2026-07', LAST_MONTH)).toBe(false)
    expect(managesWhileArchived(from('2026-01', null), '2026-07', '2026-06')).toBe(false)
    expect(managesWhileArchived(from('2026-09', null), '2026-07', '2026-08')).toBe(false)
    expect(managesWhileArchived(from(null, null), '2026-07', null)).toBe(false)
  })
})

describe('multi-valued fields', () => {
  it('are one string with their values separated by ;, read and written the same way', () => {
    expect(splitMulti('new; upsell;;renewal ')).toEqual(['new', 'upsell', 'renewal'])
    expect(joinMulti(['new', 'upsell'])).toBe('new;upsell')
    expect(splitMulti(joinMulti(['a', 'b']))).toEqual(['a', 'b'])
    expect(multiText(['new', 'upsell'])).toBe('new;upsell')
    expect(multiText('new')).toBe('new')
    expect(multiText(3)).toBe('3')
    expect(multiText({ value: 1 })).toBeNull()
  })
})

describe('metricValue: a stored value by the kind of its metric now', () => {
  it.each([
    ['amount', { value: 5, currency: 'USD' }, { value: 5, currency: 'USD' }],
    ['amount', 5, { value: 5, currency: 'EUR' }],
    ['amount', 'five', null],
    ['percentage', 0.85, 0.85],
    ['float', { value: 5, currency: 'USD' }, 5],
    ['float', '5', null],
    ['enum', 'gold', 'gold'],
    ['text', 12, '12'],
    ['text', true, 'true'],
    ['text', { value: 5 }, null],
    ['date', '2026-01-10', '2026-01-10'],
    ['date', 'January', null],
    ['date', null, null],
  ] as const)('%s of %j is %j', (kind, raw, shown) => {
    expect(metricValue({ kind, enum_values: null }, raw, 'EUR')).toEqual(shown)
  })

  it.each([
    ['gold', 'gold'],
    ['x', null],
    [7, null],
    [null, null],
  ])('an enum of gold and silver shows %j as %j: a value written before the metric allowed only these is not one of them', (raw, shown) => {
    expect(metricValue({ kind: 'enum', enum_values: ['gold', 'silver'] }, raw, 'EUR')).toBe(shown)
  })
})
