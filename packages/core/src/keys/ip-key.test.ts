import { describe, expect, it } from 'vitest'
import { ipKey } from './ip-key.js'

describe('ipKey', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['203.0.113.7:5678', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['::FFFF:203.0.113.7', '203.0.113.7'],
    ['::ffff:cb00:7107', '203.0.113.7'],
    ['0:0:0:0:0:ffff:cb00:7107', '203.0.113.7'],
    ['2001:db8:abcd:12::1', '2001:db8:abcd:12/64'],
    ['2001:0DB8:ABCD:0012:ffff:ffff:ffff:ffff', '2001:db8:abcd:12/64'],
    ['[2001:db8:abcd:12::99]:443', '2001:db8:abcd:12/64'],
    ['fe80::1%eth0', 'fe80:0:0:0/64'],
    ['::1', '0:0:0:0/64'],
    ['64:ff9b::1.2.3.4', '1.2.3.4'],
    ['64:ff9b::102:304', '1.2.3.4'],
    ['64:ff9b:1::1.2.3.4', '64:ff9b:1:0/64'],
  ])('%s → %s', (ip, key) => {
    expect(ipKey(ip)).toBe(key)
  })

  it('groups a /64 into one key and tells /64s apart', () => {
    expect(ipKey('2001:db8:1:2::a')).toBe(ipKey('2001:db8:1:2:ffff:1:2:3'))
    expect(ipKey('2001:db8:1:2::a')).not.toBe(ipKey('2001:db8:1:3::a'))
  })

  it('does not collapse IPv4-mapped clients into one bucket', () => {
    expect(ipKey('::ffff:1.2.3.4', 56)).toBe('1.2.3.4')
    expect(ipKey('::ffff:1.2.3.5', 56)).toBe('1.2.3.5')
    // Behind a NAT64 translator every IPv4 client arrives inside 64:ff9b::/96.
    expect(ipKey('64:ff9b::1.2.3.4', 56)).toBe('1.2.3.4')
    expect(ipKey('64:ff9b::1.2.3.5', 56)).toBe('1.2.3.5')
  })

  it('honours the configured prefix, including odd lengths', () => {
    expect(ipKey('2001:db8:abcd:12ff::1', 56)).toBe('2001:db8:abcd:1200/56')
    expect(ipKey('2001:db8:abcd:12ff::1', 48)).toBe('2001:db8:abcd/48')
    expect(ipKey('2001:db8::1', 128)).toBe('2001:db8:0:0:0:0:0:1/128')
  })

  it('gives bounded, recognisable keys to junk and nothing to an absent address', () => {
    expect(ipKey(undefined)).toBeUndefined()
    expect(ipKey('')).toBeUndefined()
    expect(ipKey('not-an-ip')).toBe('?not-an-ip')
    expect(ipKey('1.2.3.256')).toBe('?1.2.3.256')
    expect(ipKey('01.2.3.4')).toBe('?01.2.3.4')
    expect(ipKey('1:2:3:4:5:6:7:8:9')).toBe('?1:2:3:4:5:6:7:8:9')
    expect(ipKey('x'.repeat(500))!.length).toBe(65)
  })
})
