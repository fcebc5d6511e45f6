import { describe, expect, it } from 'vitest'
import { etagOf, ifMatchRevisions, noneMatchHits } from './etag.js'

describe('etag', () => {
  it('quotes the revision', () => {
    expect(etagOf(0)).toBe('"0"')
    expect(etagOf(42)).toBe('"42"')
  })

  it.each([
    [undefined, 3, false],
    ['"3"', 3, true],
    ['W/"3"', 3, true],
    ['"2", "3"', 3, true],
    ['"2"', 3, false],
    ['*', 3, true],
    ['3', 3, false],
  ])('If-None-Match %s against revision %i → %s', (header, revision, hit) => {
    expect(noneMatchHits(header, revision)).toBe(hit)
  })

  it.each([
    [undefined, undefined],
    ['*', undefined],
    ['"7"', [7]],
    ['"7", "8"', [7, 8]],
    ['W/"7"', []],
    ['7', []],
    ['"x"', []],
  ])('If-Match %s → %j', (header, revisions) => {
    expect(ifMatchRevisions(header)).toEqual(revisions)
  })
})
