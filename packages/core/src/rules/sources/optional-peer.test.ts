import { describe, expect, it } from 'vitest'
import { isInstalled } from './optional-peer.js'

describe('isInstalled', () => {
  it('finds a package this one can load, and not one that is absent', () => {
    expect(isInstalled('yaml')).toBe(true)
    expect(isInstalled('floodgate-no-such-package')).toBe(false)
  })
})
