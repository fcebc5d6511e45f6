import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseRateLimit, parseRetryAfter, serverWaitMs } from './server-wait.js'

const NOW = Date.parse('2026-11-22T00:00:00Z')

/** Runs `fn` with the process's local time zone set to `zone` (Node rereads TZ when it is set). */
function inTimeZone(zone: string, fn: () => void): void {
  const saved = process.env.TZ
  process.env.TZ = zone
  try {
    fn()
  } finally {
    if (saved === undefined) delete process.env.TZ
    else process.env.TZ = saved
  }
}

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

  // Date.parse reads almost anything with a letter and a digit in it as a date, in local time.
  it.each([
    'in 5',
    'a 5',
    'Jan 5',
    'tomorrow 5',
    'Mon 1',
    'abc 2026',
    '5s',
    '1e3',
    '+5',
    'Infinity',
    '2026-11-22T00:00:09Z',
    'Sun, 22 Nov 2026 00:00:09',
    'Sun, 31 Feb 2026 00:00:09 GMT',
    'Sun, 22 Nov 2026 24:00:09 GMT',
  ])('garbage %j → undefined, never a wait', (value) => {
    expect(parseRetryAfter(value, NOW)).toBeUndefined()
  })

  it.each(['UTC', 'America/New_York', 'Pacific/Kiritimati'])(
    'reads the three HTTP-date forms as GMT with the local time zone %s',
    (zone) => {
      inTimeZone(zone, () => {
        // asctime has no zone: RFC 9110 §5.6.7 says every HTTP-date is GMT.
        expect(parseRetryAfter('Sun Nov 22 00:00:09 2026', NOW)).toBe(9000)
        expect(parseRetryAfter('Sun Nov  1 00:00:05 2026', Date.UTC(2026, 10, 1))).toBe(5000)
        expect(parseRetryAfter('Sun, 22 Nov 2026 00:00:09 GMT', NOW)).toBe(9000)
        expect(parseRetryAfter('Sunday, 22-Nov-26 00:00:09 GMT', NOW)).toBe(9000)
        expect(parseRetryAfter('Sun, 22 Nov 2026 00:00:09', NOW)).toBeUndefined()
      })
    },
  )

  it('a date is the same wait for any date, read in a local time zone that is not GMT (property)', () => {
    inTimeZone('America/New_York', () =>
      fc.assert(
        fc.property(
          fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2060, 0, 1) }),
          fc.integer({ min: 0, max: 10 * 86_400 }),
          (nowMs, aheadS) => {
            const at = new Date(Math.floor(nowMs / 1000) * 1000 + aheadS * 1000)
            const imf = at.toUTCString()
            const [weekday, day, month, year, time] = imf.replace(',', '').split(' ')
            const asctime = `${weekday} ${month} ${day!.replace(/^0/, ' ')} ${time} ${year}`
            const want = Math.max(0, at.getTime() - nowMs)
            expect(parseRetryAfter(imf, nowMs)).toBe(want)
            expect(parseRetryAfter(asctime, nowMs)).toBe(want)
          },
        ),
      ),
    )
  })

  it('a repeated header (values joined by commas) asks for the longest of its values', () => {
    expect(parseRetryAfter('3, 7', NOW)).toBe(7000)
    expect(parseRetryAfter('7,3', NOW)).toBe(7000)
    const date = new Date(NOW + 9000).toUTCString()
    expect(parseRetryAfter(`${date}, 2`, NOW)).toBe(9000)
    expect(parseRetryAfter(`2, ${date}`, NOW)).toBe(9000)
    expect(parseRetryAfter(`${date}, ${date}`, NOW)).toBe(9000)
    expect(parseRetryAfter('soon, 4', NOW)).toBe(4000)
    expect(parseRetryAfter('soon, later', NOW)).toBeUndefined()
  })

  it('a repeated header reads like the header sent once with its longest value', () => {
    const headers = new Headers()
    headers.append('retry-after', '3')
    headers.append('retry-after', '7')
    expect(serverWaitMs(headers, NOW)).toBe(7000)
  })

  it('reads an RFC 850 two-digit year as a date at most 50 years ahead, comparing whole dates (property)', () => {
    // On 2026-11-22, 22-Nov-76 is 1976 (a past date: no wait), not 2076.
    expect(parseRetryAfter('Sunday, 22-Nov-76 00:00:09 GMT', NOW)).toBe(0)
    const months = [
      'Jan',
      'Feb',
      'Mar',
      'Apr',
      'May',
      'Jun',
      'Jul',
      'Aug',
      'Sep',
      'Oct',
      'Nov',
      'Dec',
    ]
    const pad = (n: number, width = 2): string => String(n).padStart(width, '0')
    // Reference: of the two full years with those digits around now, the latest whose date
    // exists and is no more than 50 years (by the calendar) after now; read through ISO text.
    const iso = (year: number, mo: number, d: number, t: string): number =>
      Date.parse(`+${pad(year, 6)}-${pad(mo + 1)}-${pad(d)}T${t}Z`)
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(1970, 0, 1), max: Date.UTC(2199, 11, 31) }),
        fc.integer({ min: 0, max: 99 }),
        fc.integer({ min: 0, max: 11 }),
        fc.integer({ min: 1, max: 29 }),
        fc.integer({ min: 0, max: 86_399 }),
        (nowMs, yy, mo, d, secs) => {
          const t = `${pad(Math.floor(secs / 3600))}:${pad(Math.floor(secs / 60) % 60)}:${pad(secs % 60)}`
          const now = new Date(nowMs)
          const base = now.getUTCFullYear() - (now.getUTCFullYear() % 100) + yy
          const limit = iso(
            now.getUTCFullYear() + 50,
            now.getUTCMonth(),
            now.getUTCDate(),
            now.toISOString().slice(11, 23),
          )
          const exists = (y: number): boolean =>
            new Date(iso(y, mo, 1, '00:00:00')).getUTCMonth() === mo &&
            new Date(iso(y, mo, d, '00:00:00')).getUTCMonth() === mo
          const year = [base, base - 100].find((y) => exists(y) && iso(y, mo, d, t) <= limit)
          const header = `Sunday, ${pad(d)}-${months[mo]}-${pad(yy)} ${t} GMT`
          const expected = year === undefined ? undefined : Math.max(0, iso(year, mo, d, t) - nowMs)
          expect(parseRetryAfter(header, nowMs)).toBe(expected)
        },
      ),
      { numRuns: 2000 },
    )
  })
})

describe('parseRateLimit', () => {
  it('reads policies whose quoted names hold any of \\ " , ; = (property)', () => {
    // A name as a structured-field string: backslash and quote escaped (RFC 8941 §3.3.3).
    const sfString = (name: string): string => `"${name.replace(/[\\"]/g, (c) => `\\${c}`)}"`
    const name = fc.stringMatching(/^[ -~]{0,12}$/)
    fc.assert(
      fc.property(
        name,
        name,
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 1, max: 1000 }),
        (a, b, rA, tA, tB) => {
          const header = `${sfString(a)};r=${rA};t=${tA}, ${sfString(b)};r=0;t=${tB}`
          expect(parseRateLimit(header)).toBe((rA === 0 ? Math.max(tA, tB) : tB) * 1000)
        },
      ),
      { numRuns: 1000 },
    )
    expect(parseRateLimit('"a\\\\";r=0;t=5, "b";r=0;t=9')).toBe(9000)
  })

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
    // A remaining count that is not a number says nothing about the quota.
    ['"default";r=;t=17', undefined],
    ['"default";r=abc;t=17', undefined],
    ['"burst";r=x;t=2, "daily";r=0;t=600', 600_000],
    ['limit=100, remaining=, reset=17', undefined],
    ['limit=100, remaining=none, reset=17', undefined],
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

  it('ignores a draft-06 RateLimit-Remaining that is not a number', () => {
    for (const remaining of ['', ' ', 'none']) {
      const headers = new Headers({ 'ratelimit-remaining': remaining, 'ratelimit-reset': '4' })
      expect(serverWaitMs(headers, NOW), JSON.stringify(remaining)).toBeUndefined()
    }
  })

  it('reads a repeated draft-06 pair', () => {
    const headers = new Headers()
    headers.append('ratelimit-remaining', '0')
    headers.append('ratelimit-remaining', '0')
    headers.append('ratelimit-reset', '4')
    headers.append('ratelimit-reset', '6')
    expect(serverWaitMs(headers, NOW)).toBe(6000)
  })

  it('is undefined when the server asked for nothing', () => {
    expect(serverWaitMs(new Headers(), NOW)).toBeUndefined()
  })
})

describe('a quota reset sent as a Unix time', () => {
  // The drafts say delay seconds; servers used to X-RateLimit-Reset send the moment instead.
  // Read as a delay, 1700000000 is 54 years: the client gave up at once with the refusal.
  const spellings = (reset: string): Headers[] => [
    new Headers({ ratelimit: `"default";r=0;t=${reset}` }),
    new Headers({ ratelimit: `limit=100, remaining=0, reset=${reset}` }),
    new Headers({ 'ratelimit-remaining': '0', 'ratelimit-reset': reset }),
  ]

  it('is the time until then, in each of the three spellings', () => {
    const at = String(NOW / 1000 + 30)
    for (const headers of spellings(at)) expect(serverWaitMs(headers, NOW)).toBe(30_000)
    expect(parseRateLimit(`"default";r=0;t=${at}`, NOW)).toBe(30_000)
    // 1700000000 is November 2023: past, so no wait beyond the backoff.
    for (const headers of spellings('1700000000')) expect(serverWaitMs(headers, NOW)).toBe(0)
  })

  it('is a time from 1,000,000,000 on, and a delay below (property)', () => {
    // Model: a reset r asks for r seconds when r < 1e9, else for the time from now until the
    // Unix time r (0 once past), whichever of the three headers carries it.
    const model = (r: number, now: number): number =>
      r < 1e9 ? r * 1000 : Math.max(0, r * 1000 - now)
    fc.assert(
      fc.property(
        fc.oneof(
          fc.integer({ min: 0, max: 999_999_999 }),
          fc.integer({ min: 999_999_990, max: 1_000_000_010 }),
          fc.integer({ min: 1_000_000_000, max: 7_258_118_400 }),
        ),
        fc.integer({ min: Date.UTC(2001, 0, 1), max: Date.UTC(2199, 11, 31) }),
        (reset, now) => {
          for (const headers of spellings(String(reset))) {
            expect(serverWaitMs(headers, now)).toBe(model(reset, now))
          }
        },
      ),
      { numRuns: 2000 },
    )
  })
})
