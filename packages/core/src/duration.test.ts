import { describe, expect, it } from 'vitest'
import { durationMs, parseDuration } from './duration.js'
import { FloodgateError } from './errors.js'

describe('parseDuration', () => {
  it.each([
    [0, 0],
    [250, 250],
    ['500ms', 500],
    ['10s', 10_000],
    ['1m', 60_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['1.5s', 1500],
    ['1.1s', 1100],
    ['0.5m', 30_000],
    ['2.25h', 8_100_000],
    ['0.001s', 1],
    ['1.000s', 1000],
    ['0ms', 0],
  ] as const)('%j is %i ms', (input, ms) => {
    expect(parseDuration(input)).toBe(ms)
  })

  it.each([
    ['10'],
    ['10x'],
    ['s'],
    [''],
    [' 10s'],
    ['10 s'],
    ['-1s'],
    ['1e3ms'],
    ['1.5ms'],
    ['0.0001s'],
    ['10S'],
    [-1],
    [1.5],
    [Number.NaN],
    [Number.POSITIVE_INFINITY],
    ['999999999999999d'],
  ] as const)('refuses %j', (input) => {
    expect(() => parseDuration(input)).toThrow(FloodgateError)
    expect(durationMs(input)).toBeUndefined()
  })

  it('names the value and the path in the error', () => {
    let err: unknown
    try {
      parseDuration('10x', 'options.windowMs')
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(FloodgateError)
    expect((err as FloodgateError).code).toBe('FG_ERR_DURATION_INVALID')
    expect((err as Error).message).toMatch(
      /^options\.windowMs: expected a duration like '500ms', '10s', '1m', '1h', '1d' or a whole number of milliseconds, got "10x" \(FG_ERR_DURATION_INVALID/,
    )
  })

  it('refuses values that are not strings or numbers', () => {
    expect(durationMs(null)).toBeUndefined()
    expect(durationMs({})).toBeUndefined()
    expect(() => parseDuration(null as unknown as string)).toThrow(/got null/)
  })
})
