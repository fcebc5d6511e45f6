import { describe, expect, it, vi } from 'vitest'
import { missingAddressWarning } from './proxy-warnings.js'

describe('missingAddressWarning', () => {
  it('warns once for requests with no client address', () => {
    const warn = vi.fn()
    const check = missingAddressWarning(warn, 'trustProxy')
    check({ ip: '203.0.113.7' })
    expect(warn).not.toHaveBeenCalled()
    check({})
    check({ ip: '' })
    expect(warn).toHaveBeenCalledTimes(1)
    expect(warn.mock.calls[0]![0]).toBe('FG_WRN_KEY_MISSING')
    expect(warn.mock.calls[0]![1]).toContain('trustProxy')
  })
})
