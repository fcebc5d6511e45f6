import { describe, expect, it } from 'vitest'
import { parseRateLimit, parseRetryAfter, serverWaitMs } from './server-wait.js'

const NOW = Date.parse('2026-11-22T00:00:00Z')

describe('parseRetryAfter', () => {
  it.each([
    ['3', 3000],
    [' 120 ', 120_000],
    ['0', 0],
    ['1.5', 1500],
    [new Date(NOW + 7000).toUTCString(), 7000],
    ['Sunday, 22-Nov-26 00:00:09 GMT', 9000],
    [new Date(NOW - 5000).toUTCString(), 0],
    ['', undefined],
    ['-1', undefined],
    ['soon', undefined],
  ])('%j → %j', (value, expected) => {
    expect(parseRetryAfter(value, NOW)).toBe(expected)
  })

  it('absent → undefined', () => {
    expect(parseRetryAfter(null, NOW)).toBeUndefined()
  })
})

describe('parseRateLimit', () => {
  it.each([
    ['"default";r=0;t=17', 17_000],
    ['"default";r=3;t=17', undefined],
    ['"burst";r=0;t=2, "daily";r=0;t=600', 600_000],
    ['"burst";r=4;t=2, "daily";r=0;t=600', 600_000],
    ['default;r=0;t=1', 1000],
    ['"a,b";r=0;t=4', 4000],
    ['"default";r=0', undefined],
    ['limit=100, remaining=0, reset=17', 17_000],
    ['limit=100, remaining=9, reset=17', undefined],
    ['garbage', undefined],
  ])('%j → %j', (value, expected) => {
    expect(parseRateLimit(value)).toBe(expected)
  })
})

describe('serverWaitMs', () => {
  it('takes the longest ask of all headers', () => {
    const headers = new Headers({ 'retry-after': '2', ratelimit: '"p";r=0;t=5' })
    expect(serverWaitMs(headers, NOW)).toBe(5000)
  })

  it('reads the draft-06 RateLimit-Remaining/Reset pair', () => {
    const headers = new Headers({ 'ratelimit-remaining': '0', 'ratelimit-reset': '4' })
    expect(serverWaitMs(headers, NOW)).toBe(4000)
    headers.set('ratelimit-remaining', '1')
    expect(serverWaitMs(headers, NOW)).toBeUndefined()
  })

  it('is undefined when the server asked for nothing', () => {
    expect(serverWaitMs(new Headers(), NOW)).toBeUndefined()
  })
})
