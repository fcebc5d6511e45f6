import type { IncomingHttpHeaders } from 'node:http'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLimiter } from '../limiter.js'
import { headerProbe, type HeaderProbe } from './header-probe.test-util.js'
import { RuleMatcher } from './rule-matcher.js'
import { compileRules } from './compile-rules.js'
import { parseRules } from './schema.js'

/**
 * A header condition `{ 'x-plan': 'free' }` holds for any of the header's values when the
 * header is repeated (docs/rules.md). Node hands a repeated header over as one string, the
 * lines joined with `, ` (`free, free`), which RFC 9110 §5.3 makes the same field as one line
 * of comma-separated values. The model: the lines as sent, each split at its commas, each piece
 * without the spaces and tabs around it; the condition holds when `want` is one of the pieces
 * or the whole value.
 */
function holds(lines: readonly string[], want: string): boolean {
  const pieces = lines.flatMap((l) => l.split(',').map((p) => p.replace(/^[ \t]*|[ \t]*$/g, '')))
  return pieces.includes(want) || lines.map((l) => l.trim()).join(', ') === want
}

const piece = fc.constantFrom('free', 'pro', 'Free', 'free ', ' free', '\tfree', 'fr', 'ee', '')
const line = fc
  .array(piece, { minLength: 1, maxLength: 3 })
  .chain((ps) => fc.constantFrom(', ', ',', ' ,').map((sep) => ps.join(sep)))
const lines = fc.array(line, { minLength: 1, maxLength: 4 })
const want = fc.constantFrom('free', 'pro', 'fr,ee', 'free, pro')

describe('a header condition and a repeated header', () => {
  let probe: HeaderProbe | undefined
  beforeAll(async () => {
    probe = await headerProbe()
  })
  afterAll(async () => {
    await probe?.close()
  })

  /** The headers Node hands over for these `X-Plan` lines, sent byte for byte. */
  async function send(values: readonly string[]): Promise<IncomingHttpHeaders> {
    const headers = await probe!.send(values.map((v) => `X-Plan: ${v}\r\n`).join(''))
    if (headers === undefined) throw new Error('no request')
    return headers
  }

  it('holds for any of the values, as Node hands them over (model: the pieces of every line)', async () => {
    await fc.assert(
      fc.asyncProperty(lines, want, async (ls, w) => {
        const headers = await send(ls)
        let matched: string[] = []
        const limiter = createLimiter({
          rules: [
            { id: 'plan', match: { headers: { 'x-plan': w } }, limit: 100, window: '1m' },
            { id: 'all', limit: 100, window: '1m' },
          ],
          onDecision: (d) => (matched = d.outcomes.map((o) => o.rule.id)),
        })
        await limiter.check({ method: 'GET', path: '/', ip: '127.0.0.1', headers })
        await limiter.close()
        expect(
          matched.includes('plan'),
          `${JSON.stringify(ls)} as ${JSON.stringify(headers['x-plan'])}`,
        ).toBe(holds(ls, w))
      }),
      { numRuns: 300 },
    )
  })

  it('`X-Plan: free` sent twice meets the rule for free (it stepped aside: `free, free`)', async () => {
    const headers = await send(['free', 'free'])
    expect(headers['x-plan']).toBe('free, free')
    const matcher = new RuleMatcher(
      compileRules(
        parseRules([
          { id: 'free', match: { headers: { 'x-plan': 'free' } }, limit: 5, window: '1m' },
        ]),
      ).rules,
    )
    expect(matcher.match({ method: 'GET', path: '/', headers }).map((c) => c.rule.id)).toEqual([
      'free',
    ])
  })

  it('a header given as a list (set-cookie) holds for a piece of any of its entries', () => {
    const matcher = new RuleMatcher(
      compileRules(
        parseRules([{ id: 'c', match: { headers: { 'x-list': 'b' } }, limit: 5, window: '1m' }]),
      ).rules,
    )
    const ids = (v: string[]) =>
      matcher.match({ method: 'GET', path: '/', headers: { 'x-list': v } }).map((c) => c.rule.id)
    expect(ids(['a', 'b'])).toEqual(['c'])
    expect(ids(['a', 'x, b'])).toEqual(['c'])
    expect(ids(['a', 'x, bb'])).toEqual([])
  })
})
