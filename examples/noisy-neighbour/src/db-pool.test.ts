import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { DbPool } from './db-pool.js'

describe('DbPool.slowDown', () => {
  beforeEach(() => void vi.useFakeTimers())
  afterEach(() => void vi.useRealTimers())

  it('makes every later query hold its connection that many times as long', async () => {
    const pool = new DbPool({ size: 1, acquireTimeoutMs: 10_000, maxQueue: 10 })
    const done: string[] = []
    void pool.query('a', 20).then(() => done.push('a'))
    pool.slowDown(4)
    // Queued behind 'a': it starts after the slowdown, so it takes 80 ms.
    void pool.query('b', 20).then(() => done.push('b'))
    await vi.advanceTimersByTimeAsync(20)
    expect(done).toEqual(['a'])
    expect(pool.load()).toEqual({ busy: 1, queued: 0 })
    await vi.advanceTimersByTimeAsync(79)
    expect(done).toEqual(['a'])
    await vi.advanceTimersByTimeAsync(1)
    expect(done).toEqual(['a', 'b'])
    expect(pool.stats().busyMsByClient).toEqual({ a: 20, b: 80 })
  })

  it('refuses a factor that is not above 0', () => {
    const pool = new DbPool({ size: 1, acquireTimeoutMs: 10, maxQueue: 1 })
    expect(() => pool.slowDown(0)).toThrow(RangeError)
    expect(() => pool.slowDown(Number.NaN)).toThrow(RangeError)
  })
})
