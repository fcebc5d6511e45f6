import { describe, expect, it } from 'vitest'
import { OptionsError, type Logger } from '@floodgate/core'
import { resolveSyncedOptions } from '../../src/synced/options.js'

describe('resolveSyncedOptions', () => {
  it('fills in the defaults', () => {
    const o = resolveSyncedOptions({})
    expect(o).toMatchObject({ prefix: 'fg', syncMs: 100, timeoutMs: 1000, maxKeys: undefined })
    expect(o.clock).toBe(Date.now)
  })

  it('keeps what the caller chose', () => {
    const clock = (): number => 42
    const logger = { debug() {}, info() {}, warn() {}, error() {} } as unknown as Logger
    const o = resolveSyncedOptions({
      prefix: 'app',
      syncMs: 50,
      syncTimeoutMs: 200,
      maxKeys: 10,
      clock,
      logger,
    })
    expect(o).toEqual({ prefix: 'app', syncMs: 50, timeoutMs: 200, maxKeys: 10, clock, logger })
  })

  it.each([
    [{ syncMs: 0 }, 'syncMs: expected an integer from 1 to 2147483647, got 0'],
    [{ syncMs: 2 ** 31 }, 'syncMs: expected an integer from 1 to 2147483647, got 2147483648'],
    [{ syncMs: '100' }, 'syncMs: expected an integer from 1 to 2147483647, got "100"'],
    [{ syncTimeoutMs: 1.5 }, 'syncTimeoutMs: expected an integer from 1 to 2147483647, got 1.5'],
    [
      { syncTimeoutMs: Number.NaN },
      'syncTimeoutMs: expected an integer from 1 to 2147483647, got NaN',
    ],
    [{ clock: 5 }, 'clock: expected a function, got 5'],
    [{ logger: { warn() {} } }, 'logger.debug: expected a function'],
    [{ prefix: 'a}' }, 'prefix'],
  ])('refuses %o, naming the option', (bad, message) => {
    const attempt = (): unknown => resolveSyncedOptions(bad as never)
    expect(attempt).toThrow(OptionsError)
    expect(attempt).toThrow(message)
  })
})
