import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { sleep } from './sleep.js'

describe('sleep', () => {
  // Only the timer functions are faked: sleep is made of nothing else.
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('chains timers past 2^31 - 1 ms instead of firing at once', async () => {
    let done = false
    const p = sleep(2 ** 31 + 10).then(() => (done = true))
    await vi.advanceTimersByTimeAsync(2 ** 31 - 1)
    expect(done).toBe(false)
    await vi.advanceTimersByTimeAsync(11)
    await p
    expect(done).toBe(true)
  })

  it('rejects with the reason and clears its timer when aborted', async () => {
    const controller = new AbortController()
    const p = sleep(10_000, controller.signal)
    controller.abort(new Error('stop'))
    await expect(p).rejects.toThrow('stop')
    expect(vi.getTimerCount()).toBe(0)
  })

  it('rejects at once for an aborted signal', async () => {
    await expect(sleep(10, AbortSignal.abort())).rejects.toMatchObject({ name: 'AbortError' })
  })
})
