import { describe, expect, it } from 'vitest'
import { isDateString } from '../src/domain/formats.ts'
import { roundToCents, sumCents } from '../src/domain/money.ts'
import { firstMonthOfPeriod, monthText, periodOfMonth } from '../src/domain/periods.ts'
import { QUOTA_FREQUENCIES } from '../src/store/model.ts'

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
})

describe('money', () => {
  it.each([
    [1.005, 1.01],
    [-1.005, -1.01],
    [2.675, 2.68],
    [0.004, 0],
    [-0.004, 0],
    [55.5555, 55.56],
  ])('rounds %d to the cent: %d', (value, rounded) => {
    expect(Object.is(roundToCents(value), rounded)).toBe(true)
  })

  it('sums cents without binary noise', () => {
    expect(sumCents([0.1, 0.2])).toBe(0.3)
    expect(sumCents(Array.from({ length: 1000 }, () => 0.01))).toBe(10)
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
