import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { appendExposeHeaders, checkExposeHeaders, exposedHeaderNames } from './expose-headers.js'

const name = fc.constantFrom('RateLimit', 'ratelimit', 'Retry-After', 'X-Request-Id', 'ETag', '*')

describe('Access-Control-Expose-Headers', () => {
  it('appends each name once, case-insensitively, after the names already there', () => {
    fc.assert(
      fc.property(
        fc.array(name, { maxLength: 4 }),
        fc.constantFrom<'ietf' | 'legacy' | 'both' | undefined>(
          'ietf',
          'legacy',
          'both',
          undefined,
        ),
        fc.boolean(),
        fc.boolean(),
        (existing, draft, shadow, asArray) => {
          const names = exposedHeaderNames(draft, shadow)
          const before = asArray ? existing : existing.join(', ')
          const merged = appendExposeHeaders(before.length === 0 ? undefined : before, names)
          const list = merged.split(', ').map((n) => n.toLowerCase())
          // What was there stays first, in its order.
          expect(merged.split(', ').slice(0, existing.length)).toEqual(existing)
          for (const n of names.split(', ')) {
            // Every name the limiter sends is there, and at most once more than before.
            const count = list.filter((m) => m === n.toLowerCase()).length
            const had = existing.filter((m) => m.toLowerCase() === n.toLowerCase()).length
            expect(count).toBe(Math.max(1, had))
          }
        },
      ),
    )
  })

  it('names the headers of each draft, Retry-After always, Floodgate-Shadow when on', () => {
    expect(exposedHeaderNames('ietf', false)).toBe('RateLimit-Policy, RateLimit, Retry-After')
    expect(exposedHeaderNames(undefined, true)).toBe('Retry-After, Floodgate-Shadow')
    expect(exposedHeaderNames('legacy', false)).toBe(
      'X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After',
    )
  })

  it('refuses a value that is not a boolean, naming the option', () => {
    expect(() => checkExposeHeaders('yes')).toThrow(
      /options\.exposeHeaders: expected a boolean, got "yes"/,
    )
    expect(checkExposeHeaders(undefined)).toBe(false)
  })
})
