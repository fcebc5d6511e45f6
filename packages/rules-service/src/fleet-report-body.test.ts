import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseHostReport, REPORT_LIMITS, type ReportError } from './fleet-report-body.js'

const good = {
  host: 'web-1:4242',
  intervalMs: 10_000,
  rules: [
    { id: 'api', counts: { allowed: 3, rejected: 1 }, top: [{ client: 'sha256:ab', count: 1 }] },
  ],
}

const refused = (body: unknown) => {
  try {
    parseHostReport(body)
  } catch (err) {
    return (err as Error).message
  }
  return 'accepted'
}

describe('parseHostReport', () => {
  it('accepts a report and fills missing counts with 0', () => {
    expect(parseHostReport(good).rules[0]?.counts).toEqual({
      allowed: 3,
      queued: 0,
      rejected: 1,
      dropped: 0,
      shadowRejected: 0,
      failedOpen: 0,
    })
  })

  it('refuses junk naming the field', () => {
    expect(refused(null)).toMatch(/expected a JSON object/)
    expect(refused([])).toMatch(/expected a JSON object/)
    expect(refused({ ...good, extra: 1 })).toMatch(/report: unknown field "extra"/)
    expect(refused({ ...good, host: '' })).toMatch(/^host: expected a string of 1-128/)
    expect(refused({ ...good, host: 'x'.repeat(129) })).toMatch(/^host:/)
    expect(refused({ ...good, host: '-a' })).toMatch(/^host: expected letters/)
    expect(refused({ ...good, host: 'a\u0000' })).toMatch(/^host: control characters/)
    expect(refused({ ...good, intervalMs: 0 })).toMatch(/^intervalMs: expected an integer/)
    expect(refused({ ...good, intervalMs: '10' })).toMatch(/^intervalMs:/)
    expect(refused({ ...good, rules: {} })).toMatch(/^rules: expected an array/)
    expect(refused({ ...good, rules: [1] })).toMatch(/^rules\[0\]: expected an object/)
    expect(refused({ ...good, rules: [{ id: 'a', counts: { allowed: -1 } }] })).toMatch(
      /^rules\[0\]\.counts\.allowed: expected an integer from 0/,
    )
    expect(refused({ ...good, rules: [{ id: 'a', counts: { allowed: 1.5 } }] })).toMatch(
      /counts\.allowed/,
    )
    expect(refused({ ...good, rules: [{ id: 'a', counts: { denied: 1 } }] })).toMatch(
      /^rules\[0\]\.counts: unknown field "denied"/,
    )
    expect(refused({ ...good, rules: [{ id: 'a' }, { id: 'a' }] })).toMatch(
      /^rules\[1\]\.id: duplicate rule "a"/,
    )
    expect(refused({ ...good, rules: [{ id: 'a', top: [{ client: 'k', count: 'x' }] }] })).toMatch(
      /^rules\[0\]\.top\[0\]\.count:/,
    )
    expect(
      refused({ ...good, rules: [{ id: 'a', top: [{ client: '\ud800', count: 1 }] }] }),
    ).toMatch(/^rules\[0\]\.top\[0\]\.client: control characters or unpaired surrogates/)
  })

  it('accepts a client of any printable text, a character outside the BMP included', () => {
    // A surrogate pair is one character (an emoji in a user id a key builder gives); only a
    // lone surrogate is not text.
    for (const client of ['u-\u{1F600}', '\u{10FFFF}', 'a\\u0000b', 'é ü']) {
      expect(refused({ ...good, rules: [{ id: 'a', top: [{ client, count: 1 }] }] })).toBe(
        'accepted',
      )
    }
    for (const client of ['\ud83d', 'a\ude00', '\ude00\ud83d']) {
      expect(refused({ ...good, rules: [{ id: 'a', top: [{ client, count: 1 }] }] })).toMatch(
        /unpaired surrogates/,
      )
    }
  })

  it('property: accepts a client exactly when it is 1-256 characters of text without control characters (model)', () => {
    const unit = fc.oneof(
      fc.constantFrom('a', 'é', '\\', '\u{1F600}', '\u2028', '\u0085'),
      fc.constantFrom('\u0000', '\t', '\n', '\u007f', '\ud83d', '\ude00'),
    )
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 8 }), (client) => {
        const units = client.split('')
        const lone = units.some((c, i) => {
          const n = c.charCodeAt(0)
          if (n >= 0xd800 && n <= 0xdbff) {
            const next = client.charCodeAt(i + 1)
            return !(next >= 0xdc00 && next <= 0xdfff)
          }
          if (n >= 0xdc00 && n <= 0xdfff) {
            const prev = client.charCodeAt(i - 1)
            return !(prev >= 0xd800 && prev <= 0xdbff)
          }
          return false
        })
        const control = units.some((c) => c.charCodeAt(0) < 0x20 || c === '\u007f')
        const ok = client.length > 0 && !lone && !control
        const answer = refused({ ...good, rules: [{ id: 'a', top: [{ client, count: 1 }] }] })
        expect(answer === 'accepted').toBe(ok)
      }),
      { numRuns: 2000 },
    )
  })

  it('refuses reports past the size bounds', () => {
    const rules = Array.from({ length: REPORT_LIMITS.rules + 1 }, (_, i) => ({ id: `r${i}` }))
    expect(refused({ ...good, rules })).toMatch(
      /^rules: expected an array of at most 256 rules, got 257 entries/,
    )
    const top = Array.from({ length: REPORT_LIMITS.top + 1 }, (_, i) => ({
      client: `c${i}`,
      count: 1,
    }))
    expect(refused({ ...good, rules: [{ id: 'a', top }] })).toMatch(
      /^rules\[0\]\.top: expected an array of at most 20/,
    )
    expect(
      refused({ ...good, rules: [{ id: 'a', top: [{ client: 'c'.repeat(257), count: 1 }] }] }),
    ).toMatch(/^rules\[0\]\.top\[0\]\.client: expected a string of 1-256/)
    expect(refused({ ...good, rules: [{ id: 'a', counts: { rejected: 1e13 } }] })).toMatch(
      /rejected/,
    )
  })
})

describe('parseHostReport: identities listed twice (property)', () => {
  // Model: a report is refused exactly when a rule id repeats in `rules` or a client repeats
  // in one rule's `top`, and the error names every repeat, in document order (rules are read
  // one by one, each with its top, before the ids are compared).
  const id = fc.constantFrom('a', 'b', 'c')
  const client = fc.constantFrom('sha256:aa', 'sha256:bb', 'k', 'K')
  const rule = fc.record({
    id,
    top: fc.array(fc.record({ client, count: fc.nat({ max: 9 }) }), { maxLength: 5 }),
  })

  function repeats(rules: { id: string; top: { client: string }[] }[]): string[] {
    const found: string[] = []
    for (const [i, r] of rules.entries()) {
      const seen = new Set<string>()
      for (const [j, t] of r.top.entries()) {
        if (seen.has(t.client))
          found.push(`rules[${i}].top[${j}].client: duplicate client ${JSON.stringify(t.client)}`)
        seen.add(t.client)
      }
    }
    const ids = new Set<string>()
    for (const [i, r] of rules.entries()) {
      if (ids.has(r.id)) found.push(`rules[${i}].id: duplicate rule ${JSON.stringify(r.id)}`)
      ids.add(r.id)
    }
    return found
  }

  it('refuses a repeated rule or client naming each, and accepts every report without one', () => {
    fc.assert(
      fc.property(fc.array(rule, { maxLength: 4 }), (rules) => {
        const expected = repeats(rules)
        let got: readonly string[] = []
        try {
          parseHostReport({ ...good, rules })
        } catch (err) {
          got = (err as ReportError).issues
        }
        expect(got).toEqual(expected)
      }),
      { numRuns: 500 },
    )
  })
})

describe('parseHostReport: every field at fault (property)', () => {
  // Model: a report built from independent faults, in any of its fields; the refusal names
  // each one (and only those). It used to name the first field checked, so a report with a
  // bad host and a bad count said nothing of the count.
  type Fault = 'extra' | 'host' | 'interval' | 'rule not object' | 'count' | 'client' | 'top'
  const faults: readonly Fault[] = [
    'extra',
    'host',
    'interval',
    'rule not object',
    'count',
    'client',
    'top',
  ]

  it('names each fault of a report, and nothing else', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.constantFrom(...faults), { minLength: 1, maxLength: faults.length }),
        (chosen) => {
          const has = (f: Fault) => chosen.includes(f)
          const body: Record<string, unknown> = {
            host: has('host') ? '-bad' : 'web-1',
            intervalMs: has('interval') ? 0 : 10_000,
            rules: [
              has('rule not object') ? 5 : { id: 'ok' },
              {
                id: 'b',
                counts: { allowed: has('count') ? -1 : 1 },
                top: has('top') ? 'many' : [{ client: has('client') ? '' : 'k', count: 1 }],
              },
            ],
          }
          if (has('extra')) body.extra = 1
          const expected: Record<Fault, RegExp> = {
            extra: /^report: unknown field "extra"/,
            host: /^host: expected letters/,
            interval: /^intervalMs: /,
            'rule not object': /^rules\[0\]: expected an object/,
            count: /^rules\[1\]\.counts\.allowed: /,
            client: /^rules\[1\]\.top\[0\]\.client: /,
            top: /^rules\[1\]\.top: /,
          }
          const wanted = chosen.filter((f) => !(f === 'client' && has('top')))
          let issues: readonly string[] = []
          try {
            parseHostReport(body)
          } catch (err) {
            issues = (err as ReportError).issues
          }
          expect(issues).toHaveLength(wanted.length)
          for (const f of wanted)
            expect(
              issues.some((i) => expected[f].test(i)),
              f,
            ).toBe(true)
        },
      ),
      { numRuns: 300 },
    )
  })

  it('lists at most 50 problems however many the body has', () => {
    const body = {
      ...good,
      ...Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`x${i}`, i])),
    }
    let issues: readonly string[] = []
    try {
      parseHostReport(body)
    } catch (err) {
      issues = (err as ReportError).issues
    }
    expect(issues).toHaveLength(51)
    expect(issues[50]).toBe('(30 more problems not listed)')
  })
})
