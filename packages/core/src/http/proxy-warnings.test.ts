import { describe, expect, it, vi } from 'vitest'
import { missingAddressWarning } from './proxy-warnings.js'

describe('missingAddressWarning', () => {
  it('warns once for requests on an open connection with no client address', () => {
    const warn = vi.fn()
    const check = missingAddressWarning(warn, 'trustProxy')
    check({ remoteAddress: '203.0.113.7' }, { ip: '203.0.113.7' })
    expect(warn).not.toHaveBeenCalled()
    check({ destroyed: false }, {})
    check({ destroyed: false }, {})
    expect(warn).toHaveBeenCalledTimes(1)
    expect(warn.mock.calls[0]![0]).toBe('FG_WRN_KEY_MISSING')
  })

  it('says nothing of a client that left: its socket no longer tells an address', () => {
    // Node reads the peer's address from the socket; once it is destroyed there is none, on
    // TCP as on a Unix socket, so a client gone is no sign of a misconfigured proxy.
    const warn = vi.fn()
    const check = missingAddressWarning(warn, 'trustProxy')
    check({ destroyed: true }, {})
    expect(warn).not.toHaveBeenCalled()
  })
})
