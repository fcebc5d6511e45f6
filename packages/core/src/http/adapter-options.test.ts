import { describe, expect, it, vi } from 'vitest'
import { validateAdapterOptions } from './adapter-options.js'

describe('validateAdapterOptions', () => {
  it('fills defaults', () => {
    const r = validateAdapterOptions({}, [], () => {})
    expect(r).toMatchObject({
      draft: 'ietf',
      shadowHeader: false,
      skip: undefined,
      cost: undefined,
    })
    expect(validateAdapterOptions({ headers: false }, [], () => {}).draft).toBeUndefined()
    expect(validateAdapterOptions({ headers: 'both' }, [], () => {}).formatOptions).toStrictEqual({
      draft: 'both',
    })
  })

  it.each([
    [{ cost: 0 }, /options\.cost: expected a positive number or a function, got 0/],
    [{ cost: Number.NaN }, /options\.cost/],
    [{ cost: '3' }, /options\.cost: .*got "3"/],
    [{ headers: 'draft-7' }, /options\.headers: .*got "draft-7"/],
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
})
