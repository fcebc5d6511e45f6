import { describe, expect, it } from 'vitest'
import { createPacer } from '@floodgate/client'
import type { Pacer, PacerOptions } from '@floodgate/client'
import { VirtualTime } from './virtual-time.js'

function pacerOn(time: VirtualTime, options: Omit<PacerOptions, 'clock' | 'sleep'>): Pacer {
  return createPacer({ ...options, clock: time.clock, sleep: time.sleep })
}

/** Calls `acquire(cost)` `n` times at once, runs until the last is let through, and returns when each was. */
async function grantTimes(time: VirtualTime, pacer: Pacer, n: number, cost = 1): Promise<number[]> {
  const times: number[] = []
  for (let i = 0; i < n; i++) void pacer.acquire(cost).then(() => times.push(time.clock()))
  await time.runAll()
  expect(times.length).toBe(n)
  return times
}

const gaps = (times: readonly number[]): number[] =>
  times.slice(1).map((t, i) => Math.round((t - times[i]!) * 1000) / 1000)

describe('createPacer: bursty (no warmup)', () => {
  it('starts with nothing stored: one call at once, then one per interval', async () => {
    const time = new VirtualTime()
    const times = await grantTimes(time, pacerOn(time, { rate: 10 }), 5)
    expect(times).toEqual([0, 100, 200, 300, 400])
  })

  it('stores up to `burst` permits while idle and spends them at once', async () => {
    const time = new VirtualTime()
    const pacer = pacerOn(time, { rate: 10, burst: 3 })
    await time.advance(10_000)
    const times = await grantTimes(time, pacer, 6)
    // Three stored, and the fourth goes at once too: its cost is paid by the caller after it.
    expect(gaps(times)).toEqual([0, 0, 0, 100, 100])
  })

  it('stores one second of permits by default', async () => {
    const time = new VirtualTime()
    const pacer = pacerOn(time, { rate: 4 })
    await time.advance(60_000)
    expect(gaps(await grantTimes(time, pacer, 7))).toEqual([0, 0, 0, 0, 250, 250])
  })

  it('with burst 0 paces strictly', async () => {
    const time = new VirtualTime()
    const pacer = pacerOn(time, { rate: 2, burst: 0 })
    await time.advance(60_000)
    expect(gaps(await grantTimes(time, pacer, 4))).toEqual([500, 500, 500])
  })

  it('lets a costly call go at once after idleness and makes the next caller pay for it', async () => {
    const time = new VirtualTime()
    const pacer = pacerOn(time, { rate: 10, burst: 0 })
    await time.advance(5000)
    expect(await pacer.acquire(20)).toBe(0)
    const waited = pacer.acquire(1)
    await time.advance(2000)
    expect(await waited).toBe(2000)
  })

  it('resolves with the milliseconds waited, and counts the waiting callers', async () => {
    const time = new VirtualTime()
    const pacer = pacerOn(time, { rate: 10 })
    const waits: number[] = []
    for (let i = 0; i < 3; i++) void pacer.acquire().then((ms) => waits.push(ms))
    await time.advance(0)
    expect(pacer.waiting).toBe(2)
    await time.advance(1000)
    expect(waits).toEqual([0, 100, 200])
    expect(pacer.waiting).toBe(0)
  })

  it('lets callers through in the order they asked, even when their turns coincide', async () => {
    const time = new VirtualTime()
    const pacer = pacerOn(time, { rate: 10, burst: 0 })
    const order: string[] = []
    void pacer.acquire(3).then(() => order.push('a'))
    // b's turn is a's plus a's cost; c and d take fractions that round to the same moment.
    void pacer.acquire(0.5).then(() => order.push('b'))
    void pacer.acquire(0.5).then(() => order.push('c'))
    void pacer.acquire(1).then(() => order.push('d'))
    await time.advance(10_000)
    expect(order).toEqual(['a', 'b', 'c', 'd'])
  })
})

describe('createPacer: warming up', () => {
  // rate 10/s (100 ms per permit), warm-up 2 s: 20 permits stored when cold, 10 above the
  // threshold, each of those costing from 290 ms down to 110 ms.
  const options = { rate: 10, warmup: 2000 }

  it('starts cold: the time per call falls linearly from about 3 intervals to 1 over the warm-up period', async () => {
    const time = new VirtualTime()
    const times = await grantTimes(time, pacerOn(time, options), 25)
    const g = gaps(times)
    expect(g.slice(0, 10)).toEqual([290, 270, 250, 230, 210, 190, 170, 150, 130, 110])
    // The ramp lasts exactly the warm-up period, then the pacer holds its rate.
    expect(times[10]! - times[0]!).toBeCloseTo(2000, 6)
    expect(g.slice(10)).toEqual(new Array(14).fill(100))
  })

  it('has no burst once warm: stored permits below the threshold cost one interval each', async () => {
    const time = new VirtualTime()
    const pacer = pacerOn(time, options)
    await grantTimes(time, pacer, 30) // warm, nothing stored
    await time.advance(1100) // half the warm-up period idle: back to the threshold
    expect(gaps(await grantTimes(time, pacer, 5))).toEqual([100, 100, 100, 100])
  })

  it('is partly cold after a shorter idleness, and fully cold after the warm-up period', async () => {
    const time = new VirtualTime()
    const pacer = pacerOn(time, options)
    await grantTimes(time, pacer, 30)
    // Idle 1500 ms from when the last call's cost was paid (100 ms after it went): 15 stored,
    // 5 above the threshold.
    await time.advance(1600)
    expect(gaps(await grantTimes(time, pacer, 8))).toEqual([190, 170, 150, 130, 110, 100, 100])
    await time.advance(2000 + 10_000)
    expect(gaps(await grantTimes(time, pacer, 3))).toEqual([290, 270])
  })

  it('starts at a third of the rate: the first second lets through about a third as many calls', async () => {
    const time = new VirtualTime()
    const times = await grantTimes(time, pacerOn(time, { rate: 30, warmup: 10_000 }), 400)
    const inFirstSecond = times.filter((t) => t < 1000).length
    const inLastSecond = times.filter((t) => t >= 12_000 && t < 13_000).length
    expect(inFirstSecond).toBeGreaterThanOrEqual(10)
    expect(inFirstSecond).toBeLessThanOrEqual(12)
    expect(inLastSecond).toBe(30)
  })
})

describe('createPacer: tryAcquire', () => {
  it('resolves false at once, taking nothing, when the turn would come too late', async () => {
    const time = new VirtualTime()
    const pacer = pacerOn(time, { rate: 1, burst: 0 })
    expect(await pacer.tryAcquire()).toBe(true) // free now
    expect(await pacer.tryAcquire()).toBe(false) // 1000 ms away, timeout 0
    expect(await pacer.tryAcquire(1, { timeoutMs: 999 })).toBe(false)
    expect(time.sleeps).toEqual([])
    const granted = pacer.tryAcquire(1, { timeoutMs: 1000 })
    await time.advance(1000)
    expect(await granted).toBe(true)
    // That call took the turn at 1000: the next one is at 2000.
    expect(await pacer.tryAcquire(1, { timeoutMs: 999 })).toBe(false)
    const forever = pacer.tryAcquire(1, { timeoutMs: Number.POSITIVE_INFINITY })
    await time.advance(1000)
    expect(await forever).toBe(true)
  })
})

describe('createPacer: AbortSignal', () => {
  it('rejects with the reason, and those behind move up as if it had never asked', async () => {
    const time = new VirtualTime()
    const pacer = pacerOn(time, { rate: 10, burst: 0 })
    const controller = new AbortController()
    const at: Record<string, number> = {}
    void pacer.acquire().then(() => (at.a = time.clock()))
    const b = pacer.acquire(5, { signal: controller.signal })
    void pacer.acquire().then(() => (at.c = time.clock()))
    await time.advance(50)
    controller.abort(new Error('gave up'))
    await expect(b).rejects.toThrow('gave up')
    await time.advance(1000)
    // Without b, c's turn is right after a's cost: 100, not 600.
    expect(at).toEqual({ a: 0, c: 100 })
  })

  it('gives the last caller’s turn back to whoever asks next', async () => {
    const time = new VirtualTime()
    const pacer = pacerOn(time, { rate: 10, burst: 0 })
    const controller = new AbortController()
    await pacer.acquire()
    void pacer.acquire(10, { signal: controller.signal }).catch(() => undefined)
    controller.abort()
    const next = pacer.acquire()
    await time.advance(100)
    expect(await next).toBe(100)
  })

  it('rejects at once for a signal already aborted, taking nothing', async () => {
    const time = new VirtualTime()
    const pacer = pacerOn(time, { rate: 10, burst: 0 })
    await expect(pacer.acquire(1, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: 'AbortError',
    })
    await expect(pacer.tryAcquire(1, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: 'AbortError',
    })
    expect(await pacer.acquire()).toBe(0)
  })

  it('an abort after the turn came changes nothing', async () => {
    const time = new VirtualTime()
    const pacer = pacerOn(time, { rate: 10, burst: 0 })
    const controller = new AbortController()
    await pacer.acquire()
    const b = pacer.acquire(1, { signal: controller.signal })
    await time.advance(100)
    controller.abort()
    expect(await b).toBe(100)
    const c = pacer.acquire()
    await time.advance(100)
    expect(await c).toBe(100)
  })
})

describe('createPacer: a sleep that fails', () => {
  it('rejects every waiter with its error instead of leaving them waiting', async () => {
    let now = 0
    const pacer = createPacer({
      rate: 10,
      burst: 0,
      clock: () => now,
      sleep: () => Promise.reject(new Error('no timers here')),
    })
    await pacer.acquire()
    const waiting = [pacer.acquire(), pacer.acquire()]
    for (const w of waiting) await expect(w).rejects.toThrow('no timers here')
    expect(pacer.waiting).toBe(0)
    now = 10_000
    expect(await pacer.acquire()).toBe(0)
  })
})

describe('createPacer: bad options', () => {
  it.each([
    [undefined, TypeError, 'createPacer: expected an object with a rate, got undefined'],
    [{}, TypeError, 'rate: expected a finite number > 0, got undefined'],
    [{ rate: 0 }, RangeError, 'rate: expected a finite number > 0, got 0'],
    [
      { rate: Number.POSITIVE_INFINITY },
      RangeError,
      'rate: expected a finite number > 0, got Infinity',
    ],
    [{ rate: '10' }, TypeError, 'rate: expected a finite number > 0, got "10"'],
    [{ rate: 1, burst: -1 }, RangeError, 'burst: expected a finite number >= 0, got -1'],
    [{ rate: 1, warmup: 0 }, RangeError, 'warmup: expected a finite number > 0, got 0'],
    [{ rate: 1, warmup: 1000, burst: 5 }, TypeError, 'burst: expected no burst with warmup'],
    [{ rate: 1, clock: 0 }, TypeError, 'clock: expected a function, got 0'],
    [{ rate: 1, sleep: 'x' }, TypeError, 'sleep: expected a function, got "x"'],
    [{ rate: 1, burts: 2 }, TypeError, 'createPacer.burts: expected one of rate, burst, warmup'],
  ])('refuses %o', (options, type, message) => {
    const make = (): unknown => createPacer(options as never)
    expect(make).toThrow(type)
    expect(make).toThrow(message)
  })

  it.each([
    [0, RangeError, 'cost: expected a finite number > 0, got 0'],
    [-1, RangeError, 'cost: expected a finite number > 0, got -1'],
    [Number.NaN, RangeError, 'cost: expected a finite number > 0, got NaN'],
    ['1', TypeError, 'cost: expected a finite number > 0, got "1"'],
  ])('rejects acquire(%o) and tryAcquire(%o)', async (cost, type, message) => {
    const pacer = createPacer({ rate: 1 })
    await expect(pacer.acquire(cost as never)).rejects.toThrow(type)
    await expect(pacer.acquire(cost as never)).rejects.toThrow(message)
    await expect(pacer.tryAcquire(cost as never)).rejects.toThrow(message)
  })

  it('rejects a bad timeoutMs or signal', async () => {
    const pacer = createPacer({ rate: 1 })
    await expect(pacer.tryAcquire(1, { timeoutMs: -1 })).rejects.toThrow(
      'timeoutMs: expected a finite number >= 0, got -1',
    )
    await expect(pacer.acquire(1, { signal: 'stop' as never })).rejects.toThrow(
      'signal: expected an AbortSignal, got "stop"',
    )
  })
})
