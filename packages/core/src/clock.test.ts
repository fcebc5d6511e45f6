import { afterEach, describe, expect, it, vi } from 'vitest'
import { systemClock, turnClock } from './clock.js'
import { createLimiter } from './limiter.js'

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

describe('turnClock', () => {
  afterEach(() => vi.restoreAllMocks())

  it('reads Date.now() once per event-loop turn and a fresh value in the next turn', async () => {
    await nextTurn() // start from a turn in which nothing read the clock
    let t = 1_000
    const now = vi.spyOn(Date, 'now').mockImplementation(() => t)
    expect(turnClock()).toBe(1_000)
    t = 1_500
    expect(turnClock()).toBe(1_000)
    expect(now).toHaveBeenCalledTimes(1)
    await nextTurn()
    expect(turnClock()).toBe(1_500)
    expect(now).toHaveBeenCalledTimes(2)
  })

  it('is the limiter default; systemClock reads Date.now() on every check', async () => {
    await nextTurn()
    let t = 50_000
    vi.spyOn(Date, 'now').mockImplementation(() => t)
    const rules = [{ id: 'r', limit: 1, window: '1s' }]
    const facts = { method: 'GET', path: '/', ip: '10.0.0.1', headers: {} }
    const perTurn = createLimiter({ rules })
    const perCall = createLimiter({ rules, clock: systemClock })
    expect(perTurn.check(facts)).toMatchObject({ allowed: true })
    expect(perCall.check(facts)).toMatchObject({ allowed: true })
    t = 51_000 // a full refill, but the turn has not ended: time stands still for turnClock
    expect(perTurn.check(facts)).toMatchObject({ allowed: false })
    expect(perCall.check(facts)).toMatchObject({ allowed: true })
    await nextTurn()
    expect(perTurn.check(facts)).toMatchObject({ allowed: true })
  })
})
