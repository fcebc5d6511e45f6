import { describe, expect, it } from 'vitest'
import { etagOf, noneMatchHits, versionOf, writeConditions } from './etag.js'

describe('etag', () => {
  const v3 = versionOf({ revision: 3, tag: 'ab12' })

  it('quotes the revision and the tag', () => {
    expect(versionOf({ revision: 0, tag: 'x' })).toBe('0-x')
    expect(etagOf('42-cd')).toBe('"42-cd"')
  })

  it.each([
    [undefined, false],
    ['"3-ab12"', true],
    ['W/"3-ab12"', true],
    ['"2-ff", "3-ab12"', true],
    ['"2-ab12"', false],
    // The same revision of another state: a set lost and provisioned again.
    ['"3-ffff"', false],
    ['"3"', false],
    ['*', true],
    ['3-ab12', false],
  ])('If-None-Match %s against "3-ab12" → %s', (header, hit) => {
    expect(noneMatchHits(header, v3)).toBe(hit)
  })

  it.each([
    [undefined, undefined],
    ['*', '*'],
    ['"7-a", *', '*'],
    ['"7-a"', ['"7-a"']],
    ['"7-a", "8-b"', ['"7-a"', '"8-b"']],
    ['W/"7-a"', []],
    ['7-a', []],
  ])('If-Match %s → %j', (header, list) => {
    expect(writeConditions(header, undefined).ifMatch).toEqual(list)
  })
})
