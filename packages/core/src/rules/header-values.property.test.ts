import type { IncomingHttpHeaders } from 'node:http'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLimiter } from '../limiter.js'
import { headerProbe, type HeaderProbe } from './header-probe.test-util.js'
import { HEADER_VALUE_PATTERN } from './header-value.js'
import { parseRules } from './schema.js'

/**
 * A header value a rule compares with (a `match.headers` condition, a `header:` entry of a deny
 * or allow list) is only worth writing if some request can carry it. Node hands a header value
 * without the spaces and tabs around it, answers 400 to one with a control character, and reads
 * each byte as one character (latin1). The model of what a request can carry, checked below
 * against a real server; the rule schema and the limiter's list options accept exactly it.
 */
function canCarry(value: string): boolean {
  if (value === '') return true
  const edge = (c: string) => c === ' ' || c === '\t'
  if (edge(value[0]!) || edge(value[value.length - 1]!)) return false
  for (const ch of value) {
    const c = ch.codePointAt(0)!
    const ok = c === 9 || (c >= 0x20 && c <= 0x7e) || (c >= 0x80 && c <= 0xff)
    if (!ok) return false
  }
  return true
}

/** Characters from every class the model tells apart. */
const char = fc.constantFrom(
  'a',
  'Z',
  '0',
  ',',
  ';',
  '"',
  ' ',
  '\t',
  '\u0000',
  '\u0001',
  '\u001f',
  '\u007f',
  '\u0080',
  '\u00e9',
  '\u00ff',
  '\u0100',
  '\u212a',
  '\u{1f600}',
  '\r',
  '\n',
)
const value = fc.array(char, { maxLength: 8 }).map((cs) => cs.join(''))

const base = { id: 'r', limit: 5, window: '1m' } as const

function refusal(run: () => unknown): string | undefined {
  try {
    run()
    return undefined
  } catch (err) {
    return (err as Error).message
  }
}

describe('a header value a rule compares with is one a request can carry', () => {
  it('match.headers: accepted exactly when a request can carry it, else refused naming the header', () => {
    fc.assert(
      fc.property(value, (v) => {
        const err = refusal(() => parseRules([{ ...base, match: { headers: { 'X-Plan': v } } }]))
        expect(err === undefined, JSON.stringify(v)).toBe(canCarry(v))
        if (err !== undefined) expect(err).toContain('rules[0].match.headers["X-Plan"]:')
      }),
      { numRuns: 500 },
    )
  })

  it("a rule's deny and allow lists: the values of a header part likewise", () => {
    fc.assert(
      fc.property(value, fc.constantFrom('deny', 'allow'), (v, list) => {
        fc.pre(v !== '')
        const err = refusal(() =>
          parseRules([{ ...base, [list]: { keys: { 'header:x-api-key': ['ok', v] } } }]),
        )
        expect(err === undefined, JSON.stringify(v)).toBe(canCarry(v))
        if (err !== undefined) expect(err).toContain(`rules[0].${list}.keys["header:x-api-key"][1]`)
        // A value for a key builder's part is any text the builder may answer.
        expect(refusal(() => parseRules([{ ...base, [list]: { keys: { user: [v] } } }]))).toBe(
          undefined,
        )
      }),
      { numRuns: 300 },
    )
  })

  it("the limiter's deny and allow options: the values of a header part likewise", () => {
    fc.assert(
      fc.property(value, fc.constantFrom('deny', 'allow'), (v, list) => {
        fc.pre(v !== '')
        const err = refusal(() =>
          createLimiter({ rules: [base], [list]: { keys: { 'header:x-api-key': [v] } } }),
        )
        expect(err === undefined, JSON.stringify(v)).toBe(canCarry(v))
        if (err !== undefined) expect(err).toContain(`${list}.keys["header:x-api-key"]`)
      }),
      { numRuns: 300 },
    )
  })

  it('the JSON Schema of a rule says the same of a header condition', () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(new RegExp(HEADER_VALUE_PATTERN).test(v), JSON.stringify(v)).toBe(canCarry(v))
      }),
      { numRuns: 500 },
    )
  })

  it('the rule `X-Plan: "free "` is refused (it was accepted and never matched a request)', () => {
    expect(
      refusal(() => parseRules([{ ...base, match: { headers: { 'x-plan': 'free ' } } }])),
    ).toMatch(/rules\[0\]\.match\.headers\["x-plan"\]: expected a header value a request can carry/)
  })
})

describe('the model against a real server', () => {
  let probe: HeaderProbe | undefined
  beforeAll(async () => {
    probe = await headerProbe()
  })
  afterAll(async () => {
    await probe?.close()
  })

  /** Send `X-Plan: <v>` byte for byte (latin1); the headers Node handed over, or undefined on a 400. */
  const send = (v: string): Promise<IncomingHttpHeaders | undefined> =>
    probe!.send(`X-Plan: ${v}\r\n`)

  it('a value the model accepts arrives as written and meets the rule; one it refuses never arrives as written', async () => {
    // CR and LF would end the header line, and a character above U+00FF has no latin1 byte:
    // neither can be sent, which is the model's point.
    const sendable = value.filter((v) => !/[\r\n]/.test(v) && [...v].every((c) => c <= '\u00ff'))
    await fc.assert(
      fc.asyncProperty(sendable, async (v) => {
        const headers = await send(v)
        if (!canCarry(v)) {
          expect(headers?.['x-plan'], JSON.stringify(v)).not.toBe(v)
          return
        }
        expect(headers?.['x-plan']).toBe(v)
        let matched: string[] = []
        const limiter = createLimiter({
          rules: [{ ...base, match: { headers: { 'x-plan': v } } }],
          onDecision: (d) => (matched = d.outcomes.map((o) => o.rule.id)),
        })
        await limiter.check({ method: 'GET', path: '/', ip: '127.0.0.1', headers: headers! })
        expect(matched).toEqual(['r'])
        await limiter.close()
      }),
      { numRuns: 200 },
    )
  })
})
