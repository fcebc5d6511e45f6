import fc from 'fast-check'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createLimiter } from './limiter.js'
import { stderrLogger, stderrWarnings } from './logger.js'
import type { RulesSource } from './rules/sources/rules-source.js'

/** What stderr was given while `run` ran. */
function captured(run: () => void): string {
  let out = ''
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk)
    return true
  })
  try {
    run()
  } finally {
    spy.mockRestore()
  }
  return out
}

/** The model: each control character (C0, DEL, C1), U+2028 and U+2029 as `\uXXXX`. */
function model(text: string): string {
  let out = ''
  for (const c of text) {
    const n = c.charCodeAt(0)
    const control = n < 0x20 || (n >= 0x7f && n <= 0x9f) || n === 0x2028 || n === 0x2029
    out += control ? `\\u${n.toString(16).padStart(4, '0')}` : c
  }
  return out
}

afterEach(() => {
  vi.restoreAllMocks()
})

const text = fc.string({
  unit: fc.oneof(
    fc.constantFrom('a', ' ', ':', '\\', 'é', '\u{1F600}'),
    fc.constantFrom('\n', '\r', '\r\n', '\u0000', '\u001b', '\t', '\u0085', '\u2028', '\u2029'),
  ),
  maxLength: 30,
})

describe('the stderr logger', () => {
  it('property: writes one line per call, whatever the message and the error carry (model)', () => {
    fc.assert(
      fc.property(text, fc.option(text, { nil: undefined }), (msg, cause) => {
        for (const log of [stderrWarnings, stderrLogger]) {
          const obj =
            cause === undefined ? { code: 'FG_X' } : { code: 'FG_X', err: new Error(cause) }
          const out = captured(() => log.warn(obj, msg))
          expect(out.endsWith('\n')).toBe(true)
          expect(out.slice(0, -1)).not.toMatch(/[\p{Cc}\u2028\u2029]/u)
          expect(out).toBe(`floodgate: ${model(`${msg}${cause ? `: ${cause}` : ''} (FG_X)`)}\n`)
        }
      }),
      { numRuns: 500 },
    )
  })

  it('a rules source failure that echoes what it read cannot forge a line', async () => {
    let fail: (err: Error) => void = () => {}
    const source: RulesSource = {
      start(_onRules, onError) {
        fail = onError
        return Promise.resolve()
      },
      stop() {},
    }
    const limiter = createLimiter({ rules: source })
    await limiter.ready
    const out = captured(() => fail(new Error('bad body "x\nfloodgate: rules updated"')))
    expect(out.split('\n')).toHaveLength(2)
    expect(out).toContain('bad body "x\\u000afloodgate: rules updated"')
    await limiter.close()
  })
})
