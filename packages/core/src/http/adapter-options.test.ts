import { describe, expect, it, vi } from 'vitest'
import { PEER_OPTION_HINTS, validateAdapterOptions } from './adapter-options.js'

describe('validateAdapterOptions', () => {
  it('fills defaults', () => {
    const r = validateAdapterOptions({}, [], () => {})
    expect(r).toMatchObject({
      format: 'ietf',
      warnings: true,
      shadowHeader: false,
      skip: undefined,
      cost: undefined,
    })
    expect(validateAdapterOptions({ headers: false }, [], () => {}).format).toBeUndefined()
    expect(validateAdapterOptions({ headers: 'both' }, [], () => {}).format).toBe('both')
    expect(validateAdapterOptions({ headers: 'draft-7' }, [], () => {}).format).toBe('draft-7')
  })

  it.each([
    [{ cost: 0 }, /options\.cost: expected a positive number or a function, got 0/],
    [{ cost: Number.NaN }, /options\.cost/],
    [{ cost: '3' }, /options\.cost: .*got "3"/],
    [
      { headers: 'draft-8' },
      /options\.headers: expected true, false, 'ietf', 'draft-7', 'legacy' or 'both', got "draft-8"/,
    ],
    [{ warnings: 'off' }, /options\.warnings: expected a boolean, got "off"/],
    [{ skip: true }, /options\.skip: expected a function, got true/],
    [{ shadowHeader: 1 }, /options\.shadowHeader/],
    [{ onLimited: {} }, /options\.onLimited: expected a function, got an object/],
  ])('throws on %o', (options, message) => {
    expect(() => validateAdapterOptions(options as never, [], () => {})).toThrow(message)
  })

  it('warns about unknown keys but accepts limiter and adapter-specific ones', () => {
    const warn = vi.fn()
    validateAdapterOptions({ store: undefined, rules: [], max: 5 } as never, ['rules'], warn)
    expect(warn).toHaveBeenCalledTimes(1)
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('options.max'))
  })

  it.each([
    'max',
    'windowMs',
    'message',
    'standardHeaders',
    'legacyHeaders',
    'keyGenerator',
    'handler',
    'skipSuccessfulRequests',
    'validate',
  ])("names what to write instead of express-rate-limit's %s", (key) => {
    const warn = vi.fn()
    validateAdapterOptions({ [key]: 1 }, [], warn)
    expect(warn).toHaveBeenCalledWith(
      `options.${key} is not a Floodgate option and is ignored; write ${PEER_OPTION_HINTS[key]}`,
    )
  })

  it.each([
    ['@fastify/rate-limit', 'timeWindow'],
    ['@fastify/rate-limit', 'ban'],
    ['@fastify/rate-limit', 'redis'],
    ['@fastify/rate-limit', 'enableDraftSpec'],
    ['@fastify/rate-limit', 'onExceeded'],
    ['koa-ratelimit', 'duration'],
    ['koa-ratelimit', 'id'],
    ['koa-ratelimit', 'errorMessage'],
    ['koa-ratelimit', 'disableHeader'],
    ['koa-ratelimit', 'blacklist'],
    ['koa-ratelimit', 'namespace'],
  ])("names what to write instead of %s's %s", (_peer, key) => {
    const warn = vi.fn()
    validateAdapterOptions({ [key]: 1 }, [], warn)
    expect(PEER_OPTION_HINTS[key]).toBeDefined()
    expect(warn).toHaveBeenCalledWith(
      `options.${key} is not a Floodgate option and is ignored; write ${PEER_OPTION_HINTS[key]}`,
    )
  })

  it("hints only at names that are neither Floodgate options nor an adapter's own", () => {
    const own = ['rules', 'onRejected', 'limitNotFound', 'exposeHeaders', 'hook']
    for (const key of Object.keys(PEER_OPTION_HINTS)) {
      expect(own).not.toContain(key)
      const warn = vi.fn()
      validateAdapterOptions({ [key]: 1 }, own, warn)
      expect(warn, key).toHaveBeenCalledTimes(1)
    }
  })
})
