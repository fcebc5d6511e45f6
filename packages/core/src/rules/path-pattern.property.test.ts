import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { RulesValidationError } from '../errors.js'
import { parseRules } from './schema.js'

// A rule's path pattern with a dot segment ('/a/../b', '/files/./x', '/a/%2e%2e/b') was kept as
// a literal: it matched only requests spelled with the same dots, never '/b', the path it
// leads to and the one a router serves. Such a pattern is refused, in every spelling, naming
// the field; a pattern without one is accepted as before.
const segment = fc.constantFrom(
  'a',
  'files',
  ':id',
  '*',
  '.',
  '..',
  '%2e',
  '%2E%2e',
  '.%2E',
  'x.y',
  '..a',
)
const isDot = (s: string): boolean => ['.', '..'].includes(s.replace(/%2e/gi, '.'))

describe('path patterns with dot segments', () => {
  it('are refused in any spelling, naming the field, and others are accepted', () => {
    fc.assert(
      fc.property(
        fc.array(segment, { minLength: 1, maxLength: 5 }),
        fc.boolean(),
        (segments, asString) => {
          const pattern = `/${segments.join('/')}`
          const rule = {
            id: 'r',
            rate: '10/1m',
            match: asString ? `GET ${pattern}` : { paths: [pattern] },
          }
          if (segments.some(isDot)) {
            expect(() => parseRules([rule])).toThrow(RulesValidationError)
            expect(() => parseRules([rule])).toThrow(
              expect.objectContaining({
                issues: [
                  expect.stringMatching(
                    /^rules\[0\]\.match(\.paths\[0\])?: expected a path pattern without '\.' or '\.\.' segments/,
                  ),
                ],
              }),
            )
          } else {
            expect(parseRules([rule])).toHaveLength(1)
          }
        },
      ),
      { numRuns: 500 },
    )
  })
})
