import { afterEach, describe, expect, it, vi } from 'vitest'
import { coarseClock, startCoarseClock } from './clock.js'

describe('coarseClock', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('is Date.now as of the last millisecond tick', () => {
    vi.useFakeTimers({ toFake: ['Date', 'setInterval'], now: 1_000_000 })
    startCoarseClock()
    expect(coarseClock()).toBe(1_000_000)
    vi.advanceTimersByTime(7)
    expect(coarseClock()).toBe(1_000_007)
    // Between ticks it holds still: never ahead of Date.now.
    vi.setSystemTime(1_000_007.5)
    expect(coarseClock()).toBe(1_000_007)
  })
})
