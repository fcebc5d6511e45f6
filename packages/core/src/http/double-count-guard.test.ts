import { describe, expect, it } from 'vitest'
import { doubleCountGuard } from './double-count-guard.js'

describe('doubleCountGuard', () => {
  it('reports a second check by the same limiter, not by another one', () => {
    const a = {}
    const b = {}
    const seenA = doubleCountGuard(a)
    const seenA2 = doubleCountGuard(a)
    const seenB = doubleCountGuard(b)
    const holder = {}
    expect(seenA(holder)).toBe(false)
    expect(seenA2(holder)).toBe(true)
    expect(seenB(holder)).toBe(false)
    expect(seenB(holder)).toBe(true)
    expect(seenA(holder)).toBe(true)
    expect(seenA({})).toBe(false)
  })
})
