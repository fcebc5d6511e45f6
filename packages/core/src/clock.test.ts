import { afterEach, describe, expect, it, vi } from 'vitest'
import { systemClock, TURN_CLOCK_DIRECT_CALLS, TURN_CLOCK_SHARE_READS, turnClock } from './clock.js'
import { createLimiter } from './limiter.js'

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** Start a turn in which turnClock shares its reading (the turn before read it many times). */
async function sharingTurn(): Promise<void> {
  await nextTurn()
  // Past any direct reads left, then enough shared reads for the next turn to share too.
  for (let i = 0; i < TURN_CLOCK_DIRECT_CALLS + TURN_CLOCK_SHARE_READS; i++) turnClock()
  await nextTurn()
}

describe('turnClock', () => {
  afterEach(() => vi.restoreAllMocks())

  it('reads Date.now() once per event-loop turn and a fresh value in the next turn', async () => {
    await sharingTurn()
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

  it('reads Date.now() directly after a turn that read it a few times, then shares one again', async () => {
    await sharingTurn()
    let t = 1_000
    const now = vi.spyOn(Date, 'now').mockImplementation(() => t)
    for (let i = 1; i < TURN_CLOCK_SHARE_READS; i++) turnClock() // too few to pay for sharing
    await nextTurn()
    // Fresh readings now, even within one turn.
    t = 2_000
    expect(turnClock()).toBe(2_000)
    t = 3_000
    expect(turnClock()).toBe(3_000)
    for (let i = 2; i < TURN_CLOCK_DIRECT_CALLS; i++) turnClock()
    expect(now).toHaveBeenCalledTimes(1 + TURN_CLOCK_DIRECT_CALLS)
    // The next call shares its reading with the rest of the turn again.
    t = 4_000
    expect(turnClock()).toBe(4_000)
    t = 5_000
    expect(turnClock()).toBe(4_000)
    expect(now).toHaveBeenCalledTimes(2 + TURN_CLOCK_DIRECT_CALLS)
    // Enough reads in that turn: the next turn shares its reading too.
    for (let i = 2; i < TURN_CLOCK_SHARE_READS; i++) turnClock()
    await nextTurn()
    t = 6_000
    expect(turnClock()).toBe(6_000)
    t = 7_000
    expect(turnClock()).toBe(6_000)
  })

  it('is the limiter default; systemClock reads Date.now() on every check', async () => {
    await sharingTurn()
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
