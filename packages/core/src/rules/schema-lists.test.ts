import { describe, expect, it } from 'vitest'
import { RulesValidationError } from '../errors.js'
import { ruleSchema } from './schema.js'
import { parseRules } from './schema.js'

function issuesOf(input: unknown): readonly string[] {
  try {
    parseRules(input)
  } catch (e) {
    expect(e).toBeInstanceOf(RulesValidationError)
    return (e as RulesValidationError).issues
  }
  throw new Error('expected the rules to be refused')
}

const rule = { id: 'r', limit: 10, window: '1m' }

describe('parseRules: deny and allow lists', () => {
  it('normalises the lists: header names in lower case, status 403 unless set', () => {
    const [r] = parseRules([
      {
        ...rule,
        deny: {
          ips: ['203.0.113.0/24', '2001:db8::/32', '192.0.2.1', '::1'],
          keys: { 'header:X-Api-Key': ['leaked'], user: ['u1'], 'custom:tenant': ['evil'] },
        },
        allow: { ips: ['10.0.0.0/8'] },
      },
    ])
    expect(r!.deny).toEqual({
      ips: ['203.0.113.0/24', '2001:db8::/32', '192.0.2.1', '::1'],
      keys: { 'header:x-api-key': ['leaked'], user: ['u1'], 'custom:tenant': ['evil'] },
      status: 403,
    })
    expect(r!.allow).toEqual({ ips: ['10.0.0.0/8'], keys: {} })
    expect(
      parseRules([{ ...rule, deny: { keys: { user: ['u'] }, status: 404 } }])[0]!.deny,
    ).toMatchObject({ ips: [], status: 404 })
    expect(parseRules([rule])[0]).not.toHaveProperty('deny')
  })

  it.each([
    [
      'a prefix longer than the address',
      { deny: { ips: ['10.0.0.0/8', '10.0.0.0/33'] } },
      `rules[0].deny.ips[1]: expected a prefix length from 0 to 32 after the '/', got "10.0.0.0/33"`,
    ],
    [
      'an IPv6 prefix past 128',
      { allow: { ips: ['2001:db8::/129'] } },
      `rules[0].allow.ips[0]: expected a prefix length from 0 to 128 after the '/', got "2001:db8::/129"`,
    ],
    [
      'a prefix that is not a number',
      { deny: { ips: ['10.0.0.0/x'] } },
      `rules[0].deny.ips[0]: expected a prefix length from 0 to 32 after the '/', got "10.0.0.0/x"`,
    ],
    [
      'a host name',
      { deny: { ips: ['example.com'] } },
      `rules[0].deny.ips[0]: expected an IP address or CIDR range ('192.0.2.0/24', '2001:db8::/32'), got "example.com"`,
    ],
    [
      'a number',
      { deny: { ips: [10] } },
      `rules[0].deny.ips[0]: expected an IP address or CIDR range ('192.0.2.0/24', '2001:db8::/32'), got 10`,
    ],
    [
      'one string instead of a list',
      { deny: { ips: '10.0.0.0/8' } },
      'rules[0].deny.ips: expected a list of at most 10000 IP addresses and CIDR ranges, got "10.0.0.0/8"',
    ],
    [
      'addresses under keys',
      { deny: { keys: { ip: ['10.0.0.1'] } } },
      `rules[0].deny.keys.ip: expected 'user', 'header:<name>' or 'custom:<name>' (addresses go in ips), got "ip"`,
    ],
    [
      'a key part that is none',
      { allow: { keys: { cookie: ['x'] } } },
      `rules[0].allow.keys.cookie: expected 'user', 'header:<name>' or 'custom:<name>' (addresses go in ips), got "cookie"`,
    ],
    [
      'an empty value',
      { deny: { keys: { user: ['u1', ''] } } },
      'rules[0].deny.keys.user[1]: expected a non-empty string of at most 1024 characters, got ""',
    ],
    [
      'a status no refusal has',
      { deny: { ips: ['10.0.0.1'], status: 200 } },
      'rules[0].deny.status: expected 403, 404, 429 or 503, got 200',
    ],
    [
      'a status on an allow list',
      { allow: { ips: ['10.0.0.1'], status: 403 } },
      'rules[0].allow.status: expected a known field (one of ips, keys), got 403',
    ],
    [
      'an empty list',
      { deny: {} },
      'rules[0].deny: expected an object with ips (addresses and CIDR ranges) and/or keys (key part to values), and optionally status, got {}',
    ],
    [
      'an unknown field',
      { deny: { cidrs: ['10.0.0.0/8'] } },
      'rules[0].deny.cidrs: expected a known field (one of ips, keys, status), got ["10.0.0.0/8"]',
    ],
  ])('refuses %s, naming the field', (_name, lists, expected) => {
    expect(issuesOf([{ ...rule, ...lists }])).toEqual([expected])
  })

  it('describes both lists in the JSON Schema', () => {
    const schema = ruleSchema.toJSONSchema() as {
      properties: Record<string, { properties: Record<string, unknown>; description: string }>
    }
    expect(Object.keys(schema.properties.deny!.properties)).toEqual(['ips', 'keys', 'status'])
    expect(Object.keys(schema.properties.allow!.properties)).toEqual(['ips', 'keys'])
    expect(schema.properties.deny!.description).toMatch(/^an object with ips/)
  })
})
