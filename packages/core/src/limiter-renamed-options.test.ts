import { afterEach, describe, expect, it, vi } from 'vitest'
import type { AlgorithmResult } from './algorithms/algorithm.js'
import type { Decision } from './decision.js'
import { OptionsError } from './errors.js'
import { createLimiter } from './limiter.js'
import type { Logger } from './logger.js'
import { renamedOption } from './options/checks.js'
import type { Store } from './stores/store.js'

// `timeoutMs` was renamed `decisionTimeoutMs`: both spellings work for one version, the old
// one with a warning logged once.

function logger() {
  const log = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() }
  return log satisfies Logger
}

/** The rename warnings a logger got (a store that fails open is logged too). */
const renameWarnings = (log: ReturnType<typeof logger>): unknown[][] =>
  log.warn.mock.calls.filter(([obj]) => (obj as { code?: string }).code === 'FG_WRN_OPTION_RENAMED')

const hanging: Store = {
  consume: () => new Promise<AlgorithmResult[]>(() => {}),
  refund: () => {},
}
const rules = [{ id: 'r', limit: 1, window: '1s' }]
const facts = { method: 'GET', path: '/', ip: '203.0.113.7', headers: {} }

/** Whether the decision is still waiting after `ms` of fake time, and then after one more. */
async function waitsExactly(decision: Decision | Promise<Decision>, ms: number): Promise<void> {
  let settled: Decision | undefined
  void Promise.resolve(decision).then((d) => (settled = d))
  await vi.advanceTimersByTimeAsync(ms - 1)
  expect(settled).toBeUndefined()
  await vi.advanceTimersByTimeAsync(1)
  expect(settled).toMatchObject({ allowed: true, failedOpen: true })
}

describe('createLimiter: decisionTimeoutMs and its old name timeoutMs', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('waits decisionTimeoutMs for a store that does not answer', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const log = logger()
    const limiter = createLimiter({ rules, store: hanging, decisionTimeoutMs: 30, logger: log })
    await waitsExactly(limiter.check(facts), 30)
    expect(renameWarnings(log)).toEqual([])
  })

  it('still reads timeoutMs, and says once per process that it is now decisionTimeoutMs', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const log = logger()
    const limiter = createLimiter({ rules, store: hanging, timeoutMs: 30, logger: log })
    await waitsExactly(limiter.check(facts), 30)
    createLimiter({ rules, store: hanging, timeoutMs: 30, logger: log })
    expect(renameWarnings(log)).toEqual([
      [
        { code: 'FG_WRN_OPTION_RENAMED', option: 'timeoutMs', newName: 'decisionTimeoutMs' },
        expect.stringContaining(
          'createLimiter: the option timeoutMs is now called decisionTimeoutMs',
        ) as string,
      ],
    ])
  })

  it('names the spelling given when its value is wrong', () => {
    expect(() => createLimiter({ timeoutMs: 0 })).toThrow(/^timeoutMs: expected an integer/)
    expect(() => createLimiter({ decisionTimeoutMs: 0 })).toThrow(
      /^decisionTimeoutMs: expected an integer/,
    )
  })

  it('refuses both names at once', () => {
    const both = (): unknown => createLimiter({ timeoutMs: 20, decisionTimeoutMs: 30 })
    expect(both).toThrow(OptionsError)
    expect(both).toThrow('timeoutMs and decisionTimeoutMs are the same option')
  })
})

describe('renamedOption', () => {
  it('answers the new name, the old one, or neither, with the name the value came under', () => {
    const log = logger()
    expect(renamedOption({ b: 1 }, 'a', 'b', 'owner', log)).toEqual({ name: 'b', value: 1 })
    expect(renamedOption({}, 'a', 'b', 'owner', log)).toEqual({ name: 'b', value: undefined })
    expect(renamedOption({ a: 2 }, 'a', 'b', 'owner', log)).toEqual({ name: 'a', value: 2 })
    expect(log.warn).toHaveBeenCalledTimes(1)
  })

  it('warns on stderr when the logger given cannot warn', () => {
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
    try {
      renamedOption({ old: 1 }, 'old', 'new', 'stderr-owner', undefined)
      expect(write).toHaveBeenCalledWith(
        expect.stringContaining('stderr-owner: the option old is now called new'),
      )
    } finally {
      write.mockRestore()
    }
  })
})
